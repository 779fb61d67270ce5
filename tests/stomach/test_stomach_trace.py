"""The compact rendering of stack traces: exception, cause chain, innermost frames, repeats, elisions."""

from __future__ import annotations

from organs.stomach.core.asked import AskTerms
from organs.stomach.core.distill.kinds import alerts_echoed
from organs.stomach.core.distill.trace import distill_trace
from organs.stomach.core.tuning import StomachTuning

JVM_CHAIN = "\n".join(
    [
        "java.lang.IllegalStateException: checkout failed",
        *[f"\tat com.shop.Layer{i}.call(Layer{i}.java:{i + 10})" for i in range(20)],
        "Caused by: java.io.IOException: disk full",
        "\tat com.shop.Disk.write(Disk.java:12)",
        *[f"\tat org.springframework.Proxy{i}.invoke(Proxy{i}.java:{i})" for i in range(15)],
        "\t... 20 more",
        "\tSuppressed: java.io.IOException: close failed",
        "\t\tat com.shop.Disk.close(Disk.java:30)",
    ]
)


def test_every_cause_keeps_its_type_and_message() -> None:
    rendering = distill_trace(JVM_CHAIN).rendering
    for header in ("IllegalStateException: checkout failed", "Caused by: java.io.IOException: disk full"):
        assert header in rendering
    assert "Suppressed: java.io.IOException: close failed" in rendering
    assert distill_trace(JVM_CHAIN).exception == "java.lang.IllegalStateException: checkout failed"


def test_the_innermost_frames_are_kept_and_the_elision_is_counted() -> None:
    rendering = distill_trace(JVM_CHAIN).rendering
    assert "Layer0.call(Layer0.java:10)" in rendering
    assert "Disk.write(Disk.java:12)" in rendering
    assert "frames elided" in rendering
    assert "Layer10.call" not in rendering


def test_the_innermost_end_keeps_more_frames_than_the_outermost() -> None:
    # A native trace, innermost first: what failed is near #0, how the program got there near the last frame.
    frames = [f"    #{i} 0x7f85{i:08x} in app::step{i}() /src/app/step{i}.cc:{i + 10}:5" for i in range(40)]
    trace = "==9==ERROR: AddressSanitizer: heap-use-after-free on address 0x6120\nREAD of size 8\n" + "\n".join(frames)
    rendering = distill_trace(trace, target_tokens=420).rendering
    shown = [i for i in range(40) if f"app::step{i}()" in rendering]
    inner = [i for i in shown if i < 20]
    assert 0 in shown and 39 in shown
    assert len(inner) > 2 * (len(shown) - len(inner))


def test_an_application_frame_hidden_among_library_frames_is_kept() -> None:
    trace = "\n".join(
        [
            "java.lang.IllegalStateException: boom",
            *[f"\tat org.springframework.Lib{i}.run(Lib{i}.java:1)" for i in range(6)],
            "\tat com.shop.Checkout.pay(Checkout.java:77)",
            *[f"\tat org.springframework.Outer{i}.run(Outer{i}.java:1)" for i in range(6)],
        ]
    )
    assert "com.shop.Checkout.pay(Checkout.java:77)" in distill_trace(trace).rendering


def test_repeated_frames_are_counted() -> None:
    trace = "\n".join(
        [
            "RangeError: Maximum call stack size exceeded",
            *["    at walk (/srv/shop/tree.js:4:10)"] * 40,
            "    at main (/srv/shop/index.js:1:1)",
        ]
    )
    rendering = distill_trace(trace).rendering
    assert "… 39 identical frames" in rendering
    assert rendering.count("at walk") == 1


def test_python_frames_keep_their_source_and_the_chain_survives() -> None:
    trace = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/srv/shop/db.py", line 12, in connect',
            "    conn = driver.open(",
            "           ^^^^^^^^^^^^",
            "ConnectionError: refused",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/srv/shop/cli.py", line 40, in main',
            "    connect()",
            "RuntimeError: cannot start",
        ]
    )
    rendering = distill_trace(trace).rendering
    assert "ConnectionError: refused" in rendering and "RuntimeError: cannot start" in rendering
    assert "conn = driver.open(" in rendering


def test_go_function_and_file_lines_stay_one_frame() -> None:
    frames = [f"main.step{i}(...)\n\t/home/me/shop/main.go:{i + 1} +0x1d" for i in range(30)]
    trace = "panic: boom\n\ngoroutine 1 [running]:\n" + "\n".join(frames)
    rendering = distill_trace(trace).rendering
    assert "main.step0(...)\n\t/home/me/shop/main.go:1 +0x1d" in rendering
    assert "main.step29(...)\n\t/home/me/shop/main.go:30 +0x1d" in rendering
    # The panicking goroutine keeps three times the untargeted plan's frames: 9 at each end of 30, 12 elided.
    assert "12 frames elided" in rendering


def test_kernel_guesses_go_first_and_stamps_leave_frames() -> None:
    lines = ["[   12.000001] BUG: KASAN: use-after-free in cart_free+0x1a/0x30", "[   12.000002] Call Trace:"]
    for i in range(30):
        lines.append(f"[   12.{i + 10:06d}]  ? noise{i}+0x1/0x10")
        lines.append(f"[   12.{i + 50:06d}]  real{i}+0x2/0x20")
    trace = "\n".join(lines)
    rendering = distill_trace(trace).rendering
    assert "BUG: KASAN: use-after-free in cart_free+0x1a/0x30" in rendering
    assert "30 unreliable ? frames elided" in rendering
    assert " real0+0x2/0x20" in rendering and "[   12.000050]" not in rendering
    roomy = distill_trace(trace, target_tokens=2_000).rendering
    assert all(f"real{i}+0x2/0x20" in roomy for i in range(30))


def test_a_target_keeps_more_frames_when_it_allows() -> None:
    small = distill_trace(JVM_CHAIN, target_tokens=120).rendering
    large = distill_trace(JVM_CHAIN, target_tokens=5_000).rendering
    assert len(small) < len(large)
    assert "Layer10.call" in large
    assert "Caused by: java.io.IOException: disk full" in small


def test_a_small_target_is_met_even_with_many_sections() -> None:
    sections = [f"Caused by: java.io.IOException: layer {i}\n\tat com.shop.L{i}.run(L{i}.java:1)" for i in range(200)]
    trace = "java.lang.IllegalStateException: top\n\tat com.shop.Main.main(Main.java:1)\n" + "\n".join(sections)
    rendering = distill_trace(trace, target_tokens=300).rendering
    assert len(rendering) <= 300 * 2.5 + 80
    assert rendering.startswith("[stack trace · java.lang.IllegalStateException: top")
    assert "elided" in rendering


def test_the_cause_chain_outlasts_the_frames() -> None:
    rendering = distill_trace(JVM_CHAIN, target_tokens=130).rendering
    assert "Caused by: java.io.IOException: disk full" in rendering
    assert "Suppressed: java.io.IOException: close failed" in rendering
    assert "frames elided" in rendering


def test_a_go_dump_keeps_function_and_file_lines_together_and_blank_lines_open_no_section() -> None:
    dump = "\n".join(
        [
            "panic: boom",
            "",
            "goroutine 7 [running]:",
            "panic(0x45cb40, 0x47ad70)",
            "\t/usr/local/go/src/runtime/panic.go:542 +0x46c fp=0xc4 sp=0xc3 pc=0x42",
            "main.work(0xc420024120)",
            "\t/home/me/shop/work.go:6 +0x39",
            "runtime.goexit()",
            "\t/usr/local/go/src/runtime/asm_amd64.s:2337 +0x1",
            "created by main.main",
            "\t/home/me/shop/main.go:5 +0x58",
        ]
    )
    digest = distill_trace(dump)
    assert digest.rendering.startswith("[stack trace · panic: boom · 4 frames · 0 chained sections]")
    assert "main.work(0xc420024120)\n\t/home/me/shop/work.go:6 +0x39" in digest.rendering


def test_the_plans_come_from_the_tuning_handed_in() -> None:
    # Without a target, the untargeted plan decides how many frames each section keeps at its ends.
    lean = StomachTuning(trace_untargeted_plan=(1, 6))
    assert "Layer2.call" in distill_trace(JVM_CHAIN).rendering
    assert "Layer2.call" not in distill_trace(JVM_CHAIN, tuning=lean).rendering
    # Cut to a target, only the plans the tuning lists are tried: with none but "every frame", a small target is
    # met by cutting that rendering's middle, not by keeping fewer frames.
    whole_only = StomachTuning(trace_frame_plans=(), trace_lean_plans=())
    cut = distill_trace(JVM_CHAIN, 60, whole_only).rendering
    assert cut != distill_trace(JVM_CHAIN, 60).rendering


def _threads(*stacks: tuple[str, list[str]]) -> str:
    """An Apple-style report's threads: each a heading and its numbered frames."""
    sections = []
    for heading, frames in stacks:
        lines = [
            f"{n:<3} libsystem_kernel.dylib  0x{0x90CE7046 + n * 16:08x} {frame} + {10 + n}"
            for n, frame in enumerate(frames)
        ]
        sections.append("\n".join([heading, *lines]))
    return "\n\n".join(sections)


def test_a_thread_whose_frames_an_earlier_thread_has_says_so_instead_of_repeating_them() -> None:
    idle = ["__workq_kernreturn", "_pthread_wqthread", "start_wqthread"]
    report = _threads(("Thread 1:", idle), ("Thread 2:", idle), ("Thread 3:", ["kevent64", "_dispatch_mgr_invoke"]))
    rendering = distill_trace(report).rendering
    assert "Thread 2:\n    … [3 frames as under Thread 1:] …" in rendering
    assert rendering.count("__workq_kernreturn") == 1
    assert "kevent64" in rendering


def test_the_crashed_thread_keeps_more_frames_than_the_others() -> None:
    deep = [f"step_{n}" for n in range(40)]
    report = _threads(("Thread 0 Crashed::", deep), ("Thread 1:", [f"wait_{n}" for n in range(40)]))
    rendering = distill_trace(report, target_tokens=900).rendering
    crashed, other = rendering.split("Thread 1:")
    assert crashed.count(" step_") > 2 * other.count(" wait_") > 0


def test_an_elided_header_keeps_the_lines_that_state_the_failure() -> None:
    header = [f"Field {n}:   value {n}" for n in range(30)]
    header[17] = "*** Terminating app due to uncaught exception 'NSRangeException', reason: 'index 9 beyond bounds'"
    frames = [f"{n:<3} app  0x{0x1000 + n:08x} frame_{n} + 4" for n in range(200)]
    rendering = distill_trace("\n".join([*header, "Thread 0 Crashed::", *frames]), target_tokens=300).rendering
    assert "index 9 beyond bounds" in rendering
    assert "Field 16:" not in rendering


def test_threads_whose_frames_differ_only_in_an_address_are_each_shown() -> None:
    first = "Thread 1:\n0   libsystem_kernel.dylib  0x90ce7046 __psynch_cvwait + 10"
    second = "Thread 2:\n0   libsystem_kernel.dylib  0x90ce7999 __psynch_cvwait + 10"
    rendering = distill_trace(f"{first}\n\n{second}").rendering
    assert "0x90ce7999" in rendering and "as under" not in rendering


def _gdb_thread(number: int, innermost: str, depth: int) -> str:
    frames = [f"#0  0x00007f563838c66d in {innermost} () from /lib64/libc.so.6", "No locals."]
    for n in range(1, depth):
        frame = f"#{n}  0x00007f56{n:08x} in worker_step_{number}_{n} (state=0x{n:x}) at worker.c:{n}"
        frames += [frame, "        x = 1"]
    return "\n".join([f"Thread {number} (Thread 0x7f56{number:08x} (LWP {5000 + number})):", *frames])


def test_gdb_frames_without_an_address_are_frames() -> None:
    trace = "Thread 1 (LWP 5):\n#0  g_hash (v=v@entry=0x0) at ghash.c:1871\n#1  0x0046 in caller () at a.c:3"
    rendering = distill_trace(trace).rendering
    assert "[stack trace · Thread 1 (LWP 5): · 2 frames · 0 chained sections]" in rendering


def test_no_locals_stays_under_its_frame_instead_of_opening_a_section() -> None:
    rendering = distill_trace(_gdb_thread(2, "compute", 6)).rendering
    assert "0 chained sections" in rendering


def test_idle_threads_are_thinned_before_the_working_one() -> None:
    working = _gdb_thread(1, "parse_entry", 30)
    idle = "\n".join(_gdb_thread(number, "poll", 30) for number in range(2, 6))
    rendering = distill_trace(f"{idle}\n{working}", target_tokens=1500).rendering
    assert rendering.count("worker_step_1_") > 10
    assert all(rendering.count(f"worker_step_{number}_") <= 2 for number in range(2, 6))


def test_threads_all_idle_are_thinned_alike() -> None:
    idle = "\n".join(_gdb_thread(number, "poll", 30) for number in range(2, 6))
    rendering = distill_trace(idle, target_tokens=1500).rendering
    assert len({rendering.count(f"worker_step_{number}_") for number in range(2, 6)}) == 1
    assert rendering.count("worker_step_2_") > 2


def _goroutine(number: int, state: str, calls: list[str]) -> str:
    """A goroutine parked in the scheduler under ``calls`` (innermost first), as a SIGQUIT dump prints it."""
    frames = [
        "runtime.gopark(0xc0002faa88?, 0x3?, 0x0?, 0x30?, 0xc0002faa1e?)",
        "\truntime/proc.go:363 +0xd6 fp=0xc0002fa9a8 sp=0xc0002fa988 pc=0x43d2f6",
        "runtime.selectgo(0xc0002faa88, 0xc0002faa18, 0xc0000ec438?, 0x1, 0x4?, 0x1)",
        "\truntime/select.go:328 +0x7bc fp=0xc0002faae8 sp=0xc0002fa9a8 pc=0x44d4bc",
    ]
    for depth, call in enumerate(calls):
        frames += [f"{call}(_, {{_, _}}, 0x{depth}?)", f"\tshop/{call.split('.')[0]}/x.go:{depth + 10} +0x1b4"]
    frames += [
        "runtime.goexit()",
        "\truntime/asm_amd64.s:1594 +0x1",
        "created by shop/pool.Start",
        "\tshop/pool/p.go:9 +0x1a5",
    ]
    return "\n".join([f"goroutine {number} [{state}]:", *frames])


_POOL = [_goroutine(number, "select", [f"pool.(*worker).loop{number % 2}"]) for number in range(20, 44)]
_STUCK = _goroutine(
    7,
    "select, 12 minutes",
    ["raft.(*node).stepWait", "raft.(*node).Propose", "server.(*Server).Do", "server.(*Server).publish", "server.run"],
)


def test_a_dump_of_many_goroutines_keeps_the_telling_ones_frames_and_counts_the_rest() -> None:
    dump = "\n\n".join([*_POOL[:12], _STUCK, *_POOL[12:]])
    rendering = distill_trace(dump, target_tokens=400, ask=AskTerms.of("Why is the publish stuck?")).rendering
    assert "server.(*Server).publish(_, {_, _}, 0x3?)" in rendering
    assert "raft.(*node).stepWait(_, {_, _}, 0x0?)" in rendering
    assert "more sections not shown: " in rendering and "× goroutine N [select]:" in rendering


def test_a_go_frames_stack_pointers_are_not_served() -> None:
    rendering = distill_trace(_STUCK, target_tokens=400).rendering
    assert "runtime/proc.go:363 +0xd6" in rendering and "fp=0x" not in rendering


def test_a_chain_of_many_causes_is_not_ranked_like_a_dump() -> None:
    sections = [f"Caused by: java.io.IOException: layer {i}\n\tat com.shop.L{i}.run(L{i}.java:1)" for i in range(40)]
    trace = "java.lang.IllegalStateException: top\n\tat com.shop.Main.main(Main.java:1)\n" + "\n".join(sections)
    assert "not shown" not in distill_trace(trace, target_tokens=200).rendering


def _with_arguments(goroutine: str, address: int) -> str:
    """The goroutine with arguments of its own, as each request's are."""
    return goroutine.replace("(_, {_, _},", f"(0xc000{address:04x}, {{0x1b9, 0xc0{address:03x}}},")


_SERVICES = [
    _goroutine(number, "select", [f"{name}.(*loop).wait", f"{name}.(*loop).run", f"{name}.start", f"{name}.main"])
    for number, name in enumerate(["admin", "certs", "metrics", "signals", "storage", "events", "health", "config"])
]
_WAITING_ON_UPSTREAM = ["proxy.(*conn).roundTrip", "proxy.(*Handler).forward", "proxy.(*Handler).ServeHTTP",
                        "web.(*Server).route", "web.(*conn).serve"]  # fmt: skip


def test_a_stack_several_goroutines_share_whatever_their_arguments_is_kept_before_lone_ones() -> None:
    requests = [_with_arguments(_goroutine(number, "select", _WAITING_ON_UPSTREAM), number) for number in range(40, 45)]
    dump = "\n\n".join([*_SERVICES, *requests])
    # Room for one goroutine's stack: the one five requests share, not the first of eight services.
    rendering = distill_trace(dump, target_tokens=300, ask=AskTerms.of("What are they blocked on?")).rendering
    assert "proxy.(*conn).roundTrip(0xc0000028" in rendering and "admin.(*loop)" not in rendering


def test_the_goroutines_in_a_shown_stacks_calls_are_named_under_it() -> None:
    requests = [_with_arguments(_goroutine(number, "select", _WAITING_ON_UPSTREAM), number) for number in range(40, 45)]
    dump = "\n\n".join([*_SERVICES, *requests])
    rendering = distill_trace(dump, target_tokens=300, ask=AskTerms.of("What are they blocked on?")).rendering
    named = "[in the same calls, arguments aside: goroutine 41 [select], goroutine 42 [select], goroutine 43 [select],"
    assert named in rendering and "more sections not shown: 8 × goroutine N [select]:]" in rendering


_PUBLISHING = _goroutine(
    7,
    "select",
    [
        "raft.(*node).stepWait",
        "raft.(*node).Propose",
        "server.(*Server).Do",
        "server.(*Server).Put",
        "server.(*Server).handle",
        "server.(*Server).publish",
        "server.(*Server).start",
        "server.run",
    ],
)


def test_a_kept_goroutine_shows_first_the_frames_naming_what_the_pastes_alerts_say_failed() -> None:
    dump = "\n\n".join([*_POOL[:12], _PUBLISHING, *_POOL[12:]])
    ask = AskTerms.of("Why does it hang?")
    echo = AskTerms.echoed(['{"level":"warn","msg":"failed to publish local member to cluster"}'])
    publish = "server.(*Server).publish(_, {_, _}, 0x5?)"
    assert publish not in distill_trace(dump, target_tokens=300, ask=ask).rendering
    assert publish in distill_trace(dump, target_tokens=300, ask=ask, echo=echo).rendering


def test_the_alert_terms_of_a_pastes_other_blocks_are_read_only_beside_a_trace() -> None:
    log = "10:01 INFO starting\n10:02 WARN failed to publish member through consensus\n10:03 INFO retrying"
    echo = alerts_echoed([("log", log), ("stack_trace", _PUBLISHING)], StomachTuning())
    assert echo is not None and {"publish", "consensu", "member"} <= set(echo.terms)
    assert "starting" not in echo.terms and "retrying" not in echo.terms
    assert alerts_echoed([("log", log), ("table", "a\tb\n1\t2")], StomachTuning()) is None
