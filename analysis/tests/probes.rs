//! Every invented probe log under `tests/probes/` (README there) reads as
//! the category its name starts with, through the excerpt and the
//! diagnosis `faultline diagnose` runs.

use std::path::Path;

use faultline_analysis::{
    Category,
    diagnose::{EXCERPT_LINES, diagnose},
    logs::{ExcerptOptions, excerpt_file},
};

fn wanted(name: &str) -> Option<Category> {
    Some(match name.split('_').next()? {
        "CODE" => Category::CodeError,
        "TEST" => Category::TestFailure,
        "DEP" => Category::DependencyError,
        "CONFIG" => Category::ConfigError,
        "INFRA" => Category::InfraError,
        _ => return None,
    })
}

#[test]
fn every_probe_reads_as_the_category_its_name_gives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes");
    let opts = ExcerptOptions {
        max_lines: EXCERPT_LINES,
        ..ExcerptOptions::default()
    };
    let (mut read, mut wrong) = (0, Vec::new());
    for shape in ["gha", "jenkins", "travis"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(shape))
            .expect("probe folder")
            .map(|e| e.expect("probe entry").path())
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let want = wanted(&name).unwrap_or_else(|| panic!("{name}: no category prefix"));
            let d = diagnose(&excerpt_file(&path, &opts).expect("probe reads"));
            read += 1;
            if d.category != want {
                wrong.push(format!(
                    "{shape}/{name}: {} ({}), want {want}",
                    d.category, d.decided_by
                ));
            }
        }
    }
    assert!(
        read >= 100,
        "only {read} probes found under {}",
        root.display()
    );
    assert!(
        wrong.is_empty(),
        "{} of {read} probes read wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
