"""LangGraph side of the kt-graph loop benchmark: the same loop graph with LangGraph's SQLite checkpointer.

Each step overwrites a counter and appends one small record (a reducer list), exactly like
crates/kt-graph/examples/loop_bench.rs. Prints time per step and bytes on disk.
"""
import operator
import os
import sqlite3
import sys
import tempfile
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class Bench(TypedDict):
    counter: int
    log: Annotated[list, operator.add]


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "bench.sqlite")

    def tick(state: Bench) -> dict:
        c = state["counter"]
        return {"counter": c + 1, "log": [{"step": c, "msg": f"record {c}"}]}

    def route(state: Bench) -> str:
        return "tick" if state["counter"] < steps else END

    g = StateGraph(Bench)
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", route, ["tick", END])

    # Three runs on fresh files and the median, like the kt-graph side (a shared 2-core box is noisy).
    runs = []
    size = 0
    for _ in range(3):
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s):
                os.remove(db + s)
        conn = sqlite3.connect(db, check_same_thread=False)
        app = g.compile(checkpointer=SqliteSaver(conn))
        config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
        t0 = time.perf_counter()
        out = app.invoke({"counter": 0, "log": []}, config)
        conn.close()
        elapsed = time.perf_counter() - t0
        assert len(out["log"]) == steps, len(out["log"])
        runs.append(elapsed * 1e3 / steps)
        size = sum(os.path.getsize(db + s) for s in ("", "-wal", "-shm") if os.path.exists(db + s))
    print(f"steps: {steps}")
    print("runs_ms_per_step: " + ",".join(f"{r:.5f}" for r in runs))
    print(f"ms_per_step: {sorted(runs)[len(runs) // 2]:.5f}")
    print(f"bytes_on_disk: {size}")


if __name__ == "__main__":
    main()
