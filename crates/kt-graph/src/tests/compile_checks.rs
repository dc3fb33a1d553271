use super::*;
use crate::{GraphError, NoError};

fn noop() -> impl crate::Node<Loop, Error = NoError> {
    node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Ok::<_, NoError>(LoopUpdate::default()) })
}

fn bump() -> impl crate::Node<Loop, Error = NoError> {
    node_fn(|s: Arc<Loop>, _c: NodeContext| async move {
        Ok::<_, NoError>(LoopUpdate::default().counter(s.counter + 1))
    })
}

#[test]
fn conflicting_parallel_overwrite_is_rejected_at_compile() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", bump()).writes(&["counter"]);
    b.node("b", bump()).writes(&["counter"]);
    b.edge(START, "a")
        .edge(START, "b")
        .edge("a", END)
        .edge("b", END);
    match b.compile().err() {
        Some(GraphError::ConflictingWrites {
            field,
            first,
            second,
        }) => {
            assert_eq!(field, "counter");
            assert_eq!((first.as_str(), second.as_str()), ("a", "b"));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn parallel_appends_and_disjoint_overwrites_compile() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", bump()).writes(&["counter"]);
    b.node("b", noop()).writes(&["log"]);
    b.node("c", noop()).writes(&["log"]);
    b.edge(START, "a").edge(START, "b").edge(START, "c");
    b.edge("a", END).edge("b", END).edge("c", END);
    assert!(b.compile().is_ok());
}

#[test]
fn conflict_found_one_step_downstream_of_a_split() {
    // a and b run together; their successors c and d then run together in the next step.
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop()).writes(&[]);
    b.node("b", noop()).writes(&[]);
    b.node("c", bump()).writes(&["counter"]);
    b.node("d", bump()).writes(&["counter"]);
    b.edge(START, "a")
        .edge(START, "b")
        .edge("a", "c")
        .edge("b", "d")
        .edge("c", END)
        .edge("d", END);
    assert!(matches!(
        b.compile(),
        Err(GraphError::ConflictingWrites { .. })
    ));
}

#[test]
fn fan_out_of_an_overwriting_node_is_rejected() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("plan", noop()).writes(&[]);
    b.node("cand", bump()).writes(&["counter"]);
    b.edge(START, "plan")
        .fan_out("plan", "cand", |_| 3)
        .edge("cand", END);
    match b.compile().err() {
        Some(GraphError::ConflictingWrites { first, second, .. }) => {
            assert_eq!((first, second), ("cand".into(), "cand".into()))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_target_is_named() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop());
    b.edge(START, "a").edge("a", "ghost");
    match b.compile().err() {
        Some(GraphError::UnknownNode {
            node,
            referenced_by,
        }) => assert_eq!((node, referenced_by), ("ghost".into(), "a".into())),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_route_target_and_on_exhausted_target_are_rejected() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop());
    b.edge(START, "a").route("a", &[END, "nowhere"], |_| END);
    assert!(matches!(b.compile(), Err(GraphError::UnknownNode { node, .. }) if node == "nowhere"));
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop()).on_exhausted("missing");
    b.edge(START, "a").edge("a", END);
    assert!(matches!(b.compile(), Err(GraphError::UnknownNode { node, .. }) if node == "missing"));
}

#[test]
fn unreachable_node_is_named() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop());
    b.node("island", noop());
    b.edge(START, "a").edge("a", END).edge("island", END);
    assert!(matches!(b.compile(), Err(GraphError::Unreachable { node }) if node == "island"));
}

#[test]
fn node_without_path_to_end_is_named() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop());
    b.node("spin", noop());
    b.edge(START, "a")
        .edge("a", END)
        .edge("a", "spin")
        .edge("spin", "spin");
    assert!(matches!(b.compile(), Err(GraphError::NoPathToEnd { node }) if node == "spin"));
}

#[test]
fn missing_entry_duplicate_names_reserved_names_and_unknown_fields_are_rejected() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop());
    b.edge("a", END);
    assert!(matches!(b.compile(), Err(GraphError::NoEntry)));

    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop());
    b.node("a", noop());
    b.edge(START, "a").edge("a", END);
    assert!(matches!(b.compile(), Err(GraphError::DuplicateNode { node }) if node == "a"));

    let mut b = GraphBuilder::<Loop>::new();
    b.node(END, noop());
    b.edge(START, END);
    assert!(matches!(b.compile(), Err(GraphError::ReservedName { .. })));

    let mut b = GraphBuilder::<Loop>::new();
    b.node("a", noop()).writes(&["countr"]);
    b.edge(START, "a").edge("a", END);
    let err = b.compile().err().unwrap();
    assert!(
        matches!(&err, GraphError::UnknownField { node, field } if node == "a" && field == "countr")
    );
    assert!(err.is_build_error());
}

#[test]
fn fingerprint_changes_with_the_shape_and_not_otherwise() {
    let g1 = loop_graph(3, counter());
    let g2 = loop_graph(5, counter());
    assert_eq!(
        g1.fingerprint(),
        g2.fingerprint(),
        "route conditions are code, not shape"
    );
    let mut b = GraphBuilder::<Loop>::new();
    b.node("tick", noop());
    b.node("extra", noop());
    b.edge(START, "tick")
        .edge("tick", "extra")
        .edge("extra", END);
    assert_ne!(b.compile().unwrap().fingerprint(), g1.fingerprint());
}
