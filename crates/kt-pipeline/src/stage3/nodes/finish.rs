//! `finish`: marks the strategy done. The result files are written from the final state by
//! [`crate::stage3::write_result`], outside the graph, because they also need Stage 1/2 figures.

use std::sync::Arc;

use kt_graph::{NoError, Node, NodeContext};

use crate::stage3::state::{Stage3State, Stage3Update};

pub(crate) struct Finish;

impl Node<Stage3State> for Finish {
    type Error = NoError;

    async fn run(
        &self,
        _state: Arc<Stage3State>,
        _ctx: NodeContext,
    ) -> Result<Stage3Update, NoError> {
        Ok(Stage3Update::default().finished(true).current(None))
    }
}
