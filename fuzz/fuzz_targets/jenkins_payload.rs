//! A Jenkins Notification plugin body through the producer's parser, as
//! the ingest handler calls it once the token is checked.

use faultline_producer::payload::jenkins::{self, Notification};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(Notification::Failed(build)) = jenkins::parse(data) else {
            return;
        };
        let _ = build.dedup_key();
        let _ = build.log_name();
        assert!(
            build.payload["jenkins"].get("log").is_none(),
            "the stored payload never carries the log"
        );
    });
}
