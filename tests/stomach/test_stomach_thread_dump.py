"""A Java thread dump is read as threads: the deadlock report and the threads that say what is stuck come first."""

from __future__ import annotations

from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.distill.thread_dump import is_thread_dump, render_thread_dump
from organs.stomach.core.tuning import StomachTuning
from tests.support.honesty import assert_bundle_honest

TUNING = StomachTuning()


def _idle(n: int) -> str:
    return (
        f'"pool-worker-{n}" #{40 + n} daemon prio=5 os_prio=0 tid=0x7f00{n:04x} nid=0x{n:x} waiting on condition\n'
        "   java.lang.Thread.State: TIMED_WAITING (parking)\n"
        "\tat jdk.internal.misc.Unsafe.park(java.base@17/Native Method)\n"
        "\tat java.util.concurrent.locks.LockSupport.parkNanos(java.base@17/LockSupport.java:252)\n"
        "\tat java.util.concurrent.ThreadPoolExecutor.getTask(java.base@17/ThreadPoolExecutor.java:1061)\n"
        "\tat java.lang.Thread.run(java.base@17/Thread.java:833)\n"
    )


def _worker(name: str, number: int, waits: str, holds: str, line: int) -> str:
    return (
        f'"{name}" #{number} prio=5 os_prio=0 tid=0x7f10{number:04x} nid=0x{number:x} waiting for monitor entry\n'
        "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
        f"\tat shop.ledger.Transfer.move(Transfer.java:{line})\n"
        f"\t- waiting to lock <{waits}> (a shop.ledger.Account)\n"
        f"\t- locked <{holds}> (a shop.ledger.Account)\n"
        "\tat shop.ledger.Transfer.run(Transfer.java:20)\n"
        "\tat java.lang.Thread.run(java.base@17/Thread.java:833)\n"
    )


_REPORT = (
    "Found one Java-level deadlock:\n"
    "=============================\n"
    '"transfer-a":\n'
    "  waiting to lock monitor 0x1 (object 0x00000007a1, a shop.ledger.Account),\n"
    '  which is held by "transfer-b"\n'
    '"transfer-b":\n'
    "  waiting to lock monitor 0x2 (object 0x00000007b2, a shop.ledger.Account),\n"
    '  which is held by "transfer-a"\n'
    "\n"
    "Found 1 deadlock.\n"
)


def _dump(with_report: bool) -> str:
    idle = "\n".join(_idle(n) for n in range(30))
    workers = (
        _worker("transfer-a", 11, "0x00000007a1", "0x00000007b2", 31)
        + "\n"
        + _worker("transfer-b", 12, "0x00000007b2", "0x00000007a1", 37)
    )
    head = "2026-03-02 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode):\n\n"
    tail = "\nJNI global refs: 12, weak refs: 0\n\n" + (_REPORT if with_report else "")
    return head + idle + "\n" + workers + tail


def test_a_deadlock_report_and_the_deadlocked_threads_come_before_thirty_idle_threads() -> None:
    text = _dump(with_report=True)
    rendered = render_thread_dump(text.split("\n"), 700, TUNING)
    assert rendered.index("Found one Java-level deadlock:") < rendered.index('"transfer-a" #11')
    assert "shop.ledger.Transfer.move(Transfer.java:31)" in rendered
    assert "\t- waiting to lock <0x00000007a1> (a shop.ledger.Account)" in rendered
    assert "pool-worker-29" in rendered  # an idle thread past the room is still named
    assert "LockSupport.parkNanos" not in rendered


def test_blocked_threads_keep_their_frames_where_no_deadlock_was_reported() -> None:
    rendered = render_thread_dump(_dump(with_report=False).split("\n"), 700, TUNING)
    assert rendered.startswith("[thread dump · 32 threads (TIMED_WAITING 30, BLOCKED 2) · no deadlock reported")
    assert "shop.ledger.Transfer.move(Transfer.java:37)" in rendered
    assert "\t- locked <0x00000007a1> (a shop.ledger.Account)" in rendered


def test_a_dump_in_a_paste_is_served_as_threads_within_the_budget_and_honestly() -> None:
    text = "Our transfers hang. Which threads are stuck on each other?\n\n" + _dump(with_report=True)
    bundle = ingest_paste(text, IngestConfig(budget_tokens=600))
    (frame,) = [frame for frame in bundle.provider.frames if frame.kind == "stack_trace"]
    assert frame.content is not None and frame.content.startswith("[thread dump · 32 threads")
    assert "Found one Java-level deadlock:" in frame.content
    assert_bundle_honest(text, bundle)


def test_a_single_trace_is_not_a_thread_dump() -> None:
    trace = 'Exception in thread "main" java.lang.IllegalStateException: closed\n\tat a.B.c(B.java:1)\n'
    assert not is_thread_dump(trace.split("\n"), TUNING)


def _blocked_request(n: int) -> str:
    return (
        f'"http-{n}" #{20 + n} prio=5 os_prio=0 tid=0x7f20{n:04x} nid=0x{20 + n:x} waiting for monitor entry\n'
        "   java.lang.Thread.State: BLOCKED (on object monitor)\n"
        "\tat shop.report.Export.render(Export.java:22)\n"
        "\t- waiting to lock <0x00000006c0> (a java.lang.Object)\n"
        "\tat shop.report.Export.doGet(Export.java:15)\n"
        "\tat javax.servlet.http.HttpServlet.service(HttpServlet.java:750)\n"
    )


_HOLDER = (
    '"http-0" #20 prio=5 os_prio=0 tid=0x7f200000 nid=0x14 waiting on condition\n'
    "   java.lang.Thread.State: TIMED_WAITING (sleeping)\n"
    "\tat java.lang.Thread.sleep(java.base@17/Native Method)\n"
    "\tat shop.report.Export.loadTemplate(Export.java:29)\n"
    "\tat shop.report.Export.render(Export.java:22)\n"
    "\t- locked <0x00000006c0> (a java.lang.Object)\n"
    "\tat shop.report.Export.doGet(Export.java:15)\n"
    "\tat javax.servlet.http.HttpServlet.service(HttpServlet.java:750)\n"
)


def _contended_dump() -> str:
    blocked = "\n".join(_blocked_request(n) for n in range(1, 13))
    idle = "\n".join(_idle(n) for n in range(10))
    head = "2026-03-02 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode):\n\n"
    return head + blocked + "\n" + idle + "\n" + _HOLDER + "\nJNI global refs: 12, weak refs: 0\n"


def test_the_thread_holding_a_monitor_others_wait_for_comes_first_and_is_named_on_top() -> None:
    rendered = render_thread_dump(_contended_dump().split("\n"), 2000, TUNING)
    lines = rendered.split("\n")
    assert lines[1] == (
        '[monitor <0x00000006c0> (a java.lang.Object) held by "http-0", waited for by 12 threads:'
        ' "http-1", "http-2", "http-3" and 9 more]'
    )
    assert rendered.index('"http-0" #20') < rendered.index('"http-1" #21')
    assert "\t- locked <0x00000006c0> (a java.lang.Object)" in rendered


def test_threads_with_the_same_state_and_frames_are_one_stack_and_their_names() -> None:
    rendered = render_thread_dump(_contended_dump().split("\n"), 2000, TUNING)
    assert rendered.count("shop.report.Export.render(Export.java:22)\n\t- waiting to lock") == 1
    names = ", ".join(f'"http-{n}"' for n in range(2, 13))
    assert f"\t… [the same state and frames: 11 more threads: {names}] …" in rendered
    assert "\t… [the same state and frames: 9 more threads: " in rendered  # the idle pool, one stack too


def test_at_a_tight_target_the_holder_keeps_its_first_frames_and_the_rest_are_named_by_pool() -> None:
    rendered = render_thread_dump(_contended_dump().split("\n"), 260, TUNING)
    assert '"http-0" #20' in rendered
    assert "\tat shop.report.Export.loadTemplate(Export.java:29)" in rendered
    not_shown = "[22 more threads not shown: http-1 … http-12 (12 alike), pool-worker-0 … pool-worker-9 (10 alike)]"
    assert not_shown in rendered
