//! TEMPORARY STUB (the real module replaces this file).
use std::io::BufRead;
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct ExcerptLine { pub line_no: u64, pub text: String, pub score: f32 }
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Excerpt { pub lines: Vec<ExcerptLine>, pub total_lines: u64, pub total_bytes: u64 }
#[derive(Debug, Clone)]
pub struct ExcerptOptions { pub max_lines: usize }
impl Default for ExcerptOptions { fn default() -> Self { Self { max_lines: 40 } } }
pub fn excerpt_reader<R: BufRead>(r: R, o: &ExcerptOptions) -> std::io::Result<Excerpt> {
    let mut lines = std::collections::VecDeque::new(); let mut n = 0u64; let mut b = 0u64;
    for l in r.split(b'\n') { let l = l?; n += 1; b += l.len() as u64 + 1; lines.push_back(ExcerptLine { line_no: n, text: String::from_utf8_lossy(&l).into_owned(), score: 0.0 }); if lines.len() > o.max_lines { lines.pop_front(); } }
    Ok(Excerpt { lines: lines.into(), total_lines: n, total_bytes: b })
}
pub fn excerpt_file(p: &std::path::Path, o: &ExcerptOptions) -> std::io::Result<Excerpt> { excerpt_reader(std::io::BufReader::new(std::fs::File::open(p)?), o) }
pub fn clean_line(raw: &str) -> std::borrow::Cow<'_, str> { std::borrow::Cow::Borrowed(raw) }
pub fn normalize(t: &str) -> String { t.trim().to_string() }
pub fn fingerprint(lines: &[&str]) -> String { use sha2::Digest; let h = sha2::Sha256::digest(lines.iter().map(|l| normalize(l)).collect::<Vec<_>>().join("\n")); h[..16].iter().map(|b| format!("{b:02x}")).collect() }
