//! A GitHub webhook body through the producer's parser, as the ingest
//! handler calls it once the signature is checked.
//!
//! Input layout: byte 0 picks the `X-GitHub-Event` header, the rest is the
//! body.

use faultline_producer::payload::github::{self, Delivery};

const EVENTS: [&str; 4] = ["workflow_run", "workflow_job", "ping", "push"];

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let [pick, body @ ..] = data else {
            return;
        };
        let event = EVENTS[usize::from(pick % 4)];
        let (Ok(Delivery::Failed(target)) | Ok(Delivery::Passed(target))) =
            github::parse(event, body)
        else {
            return;
        };
        let _ = target.job_label();
        serde_json::to_value(&target).expect("a target serialises");
        assert!(
            target.failed_steps.is_empty() || target.kind == "workflow_job",
            "only a job lists failed steps"
        );
    });
}
