//! TEMPORARY STUB (the real module replaces this file).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct KbEntry { pub slug: String, pub title: String, pub category: String, pub signatures: Vec<String>, pub keywords: Vec<String>, pub symptoms: String, pub root_cause: String, pub fix: String, pub examples: Vec<String>, pub weight: f32 }
pub fn builtin() -> &'static [KbEntry] { &[] }
pub fn parse_entries(json: &str) -> Result<Vec<KbEntry>, serde_json::Error> { serde_json::from_str(json) }
pub fn validate(_e: &[KbEntry]) -> Result<(), String> { Ok(()) }
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct SignatureHit { pub slug: String, pub category: String, pub line_no: u64, pub line: String, pub weight: f32 }
pub struct Classifier;
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Classification { pub category: String, pub confidence: f32, pub hits: Vec<SignatureHit>, pub scores: Vec<(String, f32)> }
impl Classifier {
    pub fn builtin() -> &'static Classifier { &Classifier }
    pub fn hits(&self, _l: u64, _s: &str) -> Vec<SignatureHit> { vec![] }
    pub fn classify(&self, _lines: &[(u64, String)]) -> Classification { Classification { category: "UNKNOWN".into(), confidence: 0.2, hits: vec![], scores: vec![] } }
}
