//! Tests of the reading half (kt-run-view) on a run recorded by kt-pipeline's fixture: they live here, on the
//! side that depends on the pipeline, so that the reading crate depends on no pipeline even for its tests.

use kt_graph::CheckpointId;
use kt_pipeline::job::recorded_run::record_matmul_run;
use kt_run_view::{RunRecord, history, history_page, recent_path, run_path};

#[tokio::test]
async fn pages_walk_the_history_back_from_the_newest_and_match_the_whole_list() {
    let home = tempfile::tempdir().unwrap();
    let record = RunRecord::open(record_matmul_run(home.path()).await).unwrap();
    let all = history(&record).unwrap();
    let n = all.checkpoints.len();
    assert!(n > 6, "the fixture has a path of several steps");
    let newest = history_page(&record, None, 4).unwrap();
    assert_eq!(newest.total, n as u64);
    assert!(newest.more);
    assert_eq!(newest.checkpoints, all.checkpoints[n - 4..]);
    assert_eq!(newest.branches, all.branches);
    // walking back page by page gives every checkpoint once, the oldest page saying there is no more
    let mut walked = newest.checkpoints.clone();
    let mut page = newest;
    while page.more {
        let first = CheckpointId(page.checkpoints[0].checkpoint);
        page = history_page(&record, Some(first), 4).unwrap();
        walked.splice(0..0, page.checkpoints.iter().cloned());
    }
    assert_eq!(walked, all.checkpoints);
    let past_the_input = history_page(&record, Some(CheckpointId(0)), 4).unwrap();
    assert!(past_the_input.checkpoints.is_empty() && !past_the_input.more);
}

#[tokio::test]
async fn the_recent_path_is_the_tail_of_the_whole_path_over_the_whole_lineage() {
    let home = tempfile::tempdir().unwrap();
    let run = record_matmul_run(home.path()).await;
    let record = RunRecord::open(run).unwrap();
    let whole = run_path(&record, None).unwrap();
    assert!(whole.len() > 5, "{}", whole.len());
    let recent = recent_path(&record, None, 3).unwrap();
    assert_eq!(recent.lineage.len(), whole.len());
    assert_eq!(recent.ran.len(), whole.len());
    assert_eq!(recent.steps, whole[whole.len() - 3..].to_vec());
    let head = record.head().unwrap();
    assert_eq!(recent.state, Some(record.fields_at(head).unwrap()));
    let ids: Vec<u64> = recent.lineage.iter().map(|h| h.id.0).collect();
    let whole_ids: Vec<u64> = whole.iter().map(|s| s.checkpoint).collect();
    assert_eq!(ids, whole_ids);
    let none = recent_path(&record, None, 0).unwrap();
    assert!(none.steps.is_empty() && none.state.is_none());
    let early = recent_path(&record, Some(CheckpointId(2)), 10).unwrap();
    assert_eq!(
        early.steps,
        whole[..3].to_vec(),
        "the path to an earlier checkpoint"
    );
}
