"""Reports blank lines do not end: a JVM thread dump and crash report are one segment, the user's words apart."""

from __future__ import annotations

from organs.stomach import ingest_paste
from organs.stomach.core.blocks.split import split_blocks
from organs.stomach.core.blocks.structures import _comment_open_after, join_tool_runs
from organs.stomach.core.blocks.voice import in_someones_voice
from organs.stomach.core.tuning import AskTuning, ClassifyTuning

_DUMP = """2025-03-02 10:00:00
Full thread dump OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode):

"main" #1 prio=5 os_prio=0 tid=0x01 nid=0x10 waiting on condition
   java.lang.Thread.State: TIMED_WAITING (sleeping)
	at java.lang.Thread.sleep(Native Method)
	at Shop.main(Shop.java:30)

"ledger-writer" #20 prio=5 os_prio=0 tid=0x02 nid=0x11 waiting for monitor entry
   java.lang.Thread.State: BLOCKED (on object monitor)
	at Shop.write(Shop.java:12)

JNI global refs: 4, weak refs: 0

Found one Java-level deadlock:
=============================
"ledger-writer":
  waiting to lock monitor 0x0a (object 0x0b, a java.lang.Object),
  which is held by "audit-reader"

Found 1 deadlock."""


def test_a_thread_dump_is_one_stack_trace_segment_and_the_ask_stays_apart() -> None:
    paste = f"Our shop hangs after a minute.\n\n{_DUMP}\n\nWhich threads are deadlocked?"
    bundle = ingest_paste(paste)
    kinds = [(entry.kind, entry.outcome) for entry in bundle.report]
    assert kinds == [("prose", "frame"), ("stack_trace", "frame"), ("prose", "goal")]
    assert bundle.query.goal == "Which threads are deadlocked?"


def test_a_dump_whose_threads_list_their_locked_synchronizers_after_a_blank_line_is_one_segment() -> None:
    # jstack -l of a recent JDK: each thread's "Locked ownable synchronizers" stands indented after a blank line.
    threads = "\n\n".join(
        f'"worker-{k}" #{k} prio=5 os_prio=31 tid=0x0{k} nid={k} waiting on condition\n'
        f"   java.lang.Thread.State: WAITING (parking)\n\tat Shop.take(Shop.java:{k + 10})\n\n"
        "   Locked ownable synchronizers:\n\t- None"
        for k in range(4)
    )
    dump = f"2025-03-02 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (21.0.2+13 mixed mode):\n\n{threads}"
    bundle = ingest_paste(f"{dump}\n\nWhich thread holds the lock?")
    assert [entry.kind for entry in bundle.report] == ["stack_trace", "prose"]


def test_a_crash_report_runs_to_its_end_line() -> None:
    report = "\n\n".join(
        [
            "#\n# A fatal error has been detected by the Java Runtime Environment:\n#\n#  SIGSEGV (0xb) at pc=0x1",
            '---------------  T H R E A D  ---------------\n\nCurrent thread (0x2):  JavaThread "main"',
            "Stack: [0x3,0x4],  sp=0x5\nj  Shop.main([Ljava/lang/String;)V+37",
            "END.",
        ]
    )
    paste = f"{report}\n\nThe crash started after the upgrade. What crashed the JVM?"
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report] == ["stack_trace", "prose"]
    assert bundle.report[0].span == (0, len(report))


def test_an_apple_crash_report_is_one_trace_from_its_process_line() -> None:
    report = "\n\n".join(
        [
            "Process:         Shop [4466]\nPath:            /Applications/Shop.app/Contents/MacOS/Shop",
            "Crashed Thread:  0  Dispatch queue: com.apple.main-thread",
            "Exception Type:  EXC_CRASH (SIGABRT)",
            "Thread 0 Crashed:: Dispatch queue: com.apple.main-thread\n0   libsystem_kernel.dylib  0x90ce6286 __kill",
            "Binary Images:\n0x1000 - 0x2fff +com.example.Shop (2.5) <83ED274E> /Applications/Shop.app/Shop",
        ]
    )
    bundle = ingest_paste(f"{report}\n\nWhy does it crash when I open a file?")
    assert [entry.kind for entry in bundle.report] == ["stack_trace", "prose"]
    assert bundle.report[0].span == (0, len(report))


def test_blocks_that_do_not_continue_a_dump_are_not_joined_to_it() -> None:
    paste = f"{_DUMP}\n\n| pod | restarts |\n|---|---|\n| shop-1 | 4 |\n\nWhy does it hang?"
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report] == ["stack_trace", "table", "prose"]


_LINT_RUN = "\n\n".join(
    [
        "E501 Line too long (130 > 120)\n --> app/views.py:12:121\n  |\n12 | x = 1\n  |",
        "F401 `os` imported but unused\n --> app/models.py:1:8\n  |\n1 | import os\n  |",
        "B006 Do not use mutable data structures for argument defaults\n --> app/forms.py:40:22",
        "Found 3 errors.",
    ]
)


def test_a_tool_run_split_by_blank_lines_is_one_log_segment() -> None:
    paste = f"Linting the app before the release:\n\n{_LINT_RUN}\n\nWhich files have unused imports?"
    bundle = ingest_paste(paste)
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [
        ("prose", "frame"),
        ("log", "frame"),
        ("prose", "goal"),
    ]


def test_a_style_checker_run_closing_with_its_tally_is_one_log_and_its_code_lines_ask_nothing() -> None:
    # The quoted source under an offence may end in a question mark; it is the run's, not the user's question.
    run = (
        "app/models/cart.rb:4:3: C: Style/GuardClause: Use a guard clause instead.\n"
        "  return total if items.empty?\n"
        "  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n\n"
        "lib/tasks/sync.rake:9:12: W: Lint/UselessAssignment: Useless assignment to variable - rows.\n"
        "  rows = Cart.all\n"
        "  ^^^^\n\n"
        "12 files inspected, 2 offenses detected"
    )
    bundle = ingest_paste(f"{run}\n\nWhich of these can be autocorrected?")
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [("log", "frame"), ("prose", "goal")]
    assert bundle.query.goal == "Which of these can be autocorrected?"


def test_an_echoed_sql_session_is_one_segment_and_the_users_words_stay_apart() -> None:
    session = (
        "CREATE TABLE shop (id int primary key, note text);\n"
        "INSERT INTO shop VALUES (1, 'a');\n\n"
        "SELECT * FROM shop;\n id | note \n----+------\n  1 | a\n(1 row)\n\n"
        "ALTER TABLE shop ADD COLUMN id int;\n"
        'ERROR:  column "id" of relation "shop" already exists\n\n'
        "select count(*) from shop;\n count \n-------\n     1\n(1 row)"
    )
    paste = f"Our migration, run with psql -a:\n\n{session}\n\nWhy does the ALTER fail?"
    bundle = ingest_paste(paste)
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [
        ("prose", "frame"),
        ("table", "frame"),
        ("prose", "goal"),
    ]


def test_a_sentence_opening_with_a_keyword_is_not_joined_to_a_session() -> None:
    session = "SELECT 1;\n ?column? \n----------\n        1\n(1 row)"
    paste = f"{session}\n\nSet up like this, the query returns one row as expected.\n\nWhat does ?column? mean?"
    kinds = [entry.kind for entry in ingest_paste(paste).report]
    assert kinds == ["table", "prose", "prose"]


def test_a_debuggers_core_report_opening_with_its_thread_notices_is_one_segment() -> None:
    report = (
        "[New LWP 2845]\n[New LWP 2923]\n[New LWP 2924]\n[New LWP 2947]\n[New LWP 2948]\n"
        "Core was generated by `/usr/libexec/shop-daemon'.\n"
        "Program terminated with signal SIGSEGV, Segmentation fault.\n"
        "#0  0x00007f778873dbde in list_foreach () from /lib64/libshop.so.3\n\n"
        "Thread 2 (Thread 0x7f773fdf0700 (LWP 2923)):\n#0  0x00007f77903f266d in poll () at /lib64/libc.so.6\n\n"
        "Thread 1 (Thread 0x7f77986e2a00 (LWP 2845)):\n"
        "#0  0x00007f778873dbde in list_foreach () at /lib64/libshop.so.3\n"
        "#1  0x00007f778872d352 in message_unref () at /lib64/libshop.so.3\n\n"
        "rax            0x1\t1\nrip            0x7f778873dbde\t0x7f778873dbde <list_foreach+46>"
    )
    bundle = ingest_paste(f"The daemon dies every few days:\n\n{report}\n\nWhich thread crashed?")
    assert len(bundle.report) == 3
    assert bundle.report[1].span == (bundle.report[0].span[1] + 2, bundle.report[2].span[0] - 2)


_GDB_THREADS = (
    "Thread 2 (Thread 0x7f2a5bfff700 (LWP 2230)):\n"
    "#0  0x00007f2a6a1c154d in __lll_lock_wait () from /lib64/libpthread.so.0\n"
    "#1  0x000000000045b0c4 in stats_flush (s=0x1e3c200) at stats.c:77\n"
    "#2  0x000000000045a301 in cache_evict (c=0x1e3c010) at cache.c:201\n\n"
    "Thread 1 (Thread 0x7f2a6b5e2740 (LWP 2229)):\n"
    "#0  0x00007f2a69eaf84d in nanosleep () from /lib64/libc.so.6\n"
    "#1  0x0000000000401a2c in main (argc=1, argv=0x7ffd3c1e2a48) at main.c:55"
)


def test_a_debuggers_thread_heading_opening_the_evidence_is_not_the_users_words() -> None:
    bundle = ingest_paste(f"The server hangs; this is thread apply all bt. Which threads are stuck?\n\n{_GDB_THREADS}")
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [("prose", "goal"), ("stack_trace", "frame")]


def test_an_lldb_thread_heading_opening_the_evidence_is_not_the_users_words() -> None:
    frames = (
        "* thread #1, queue = 'com.apple.main-thread', stop reason = EXC_BAD_ACCESS (code=1, address=0x0)\n"
        "  * frame #0: 0x0000000100003f2c shop`cart_total(cart=0x0000000000000000) at cart.c:12:18\n"
        "    frame #1: 0x0000000100003f80 shop`checkout(cart=0x0000000000000000) at cart.c:40:9\n"
        "    frame #2: 0x0000000100003fa0 shop`main(argc=1, argv=0x00007ff7bfeff6c8) at main.c:30:5"
    )
    bundle = ingest_paste(f"It crashes on start. Why does cart_total crash?\n\n{frames}")
    assert [entry.kind for entry in bundle.report] == ["prose", "stack_trace"]


def test_a_failed_tests_locals_between_blank_lines_stay_in_the_run() -> None:
    test = (
        "_________________________________ test_create_{n} _________________________________\n\n"
        "args = ['name', 'text']\n\n"
        "    def test_create_{n}(args):\n        runner = CliRunner()\n>       with runner.isolated_filesystem():\n\n"
        "tests/test_cli.py:1415: \n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n\n"
        "self = <click.testing.CliRunner object at 0x7fdf416c86d0>, temp_dir = None\n\n"
        "    @contextlib.contextmanager\n    def isolated_filesystem(self, temp_dir=None):\n"
        '        """A context manager that creates a temporary directory.\n\n'
        "        .. deprecated:: 8.5.0\n            Will be removed in Click 9.0.\n"
        '        """\n>       warnings.warn("deprecated", DeprecationWarning)\n'
        "E       DeprecationWarning: deprecated\n\n"
        "../venv/lib/python3.11/site-packages/click/testing.py:773: DeprecationWarning\n"
    )
    failures = "\n".join(test.format(n=n) for n in range(4))
    summary = "\n".join(f"FAILED tests/test_cli.py::test_create_{n} - DeprecationWarning: deprecated" for n in range(4))
    failure = (
        f"=================================== FAILURES ===================================\n{failures}\n"
        f"=========================== short test summary info ============================\n{summary}\n"
        "========================= 4 failed, 80 passed in 0.62s ========================="
    )
    paste = f"The suite went red after an upgrade. Why does test_create fail?\n\n{failure}"
    tuning = ClassifyTuning()
    runs = join_tool_runs(paste, split_blocks(paste, 200, AskTuning(), tuning), tuning)
    assert [paste[block.start : block.end] for block in runs] == [paste.split("\n\n")[0], failure]


def test_two_tool_runs_stay_two_segments() -> None:
    tests = "test_a.py::test_one PASSED\ntest_a.py::test_two FAILED\n\n=== 1 failed, 1 passed in 0.10s ==="
    paste = f"{_LINT_RUN}\n\n{tests}\n\nWhy does test_two fail?"
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report] == ["log", "log", "prose"]


def test_the_users_words_are_not_served_cut() -> None:
    context = (
        "We moved the nightly export to the new cluster on Monday and since then the report job has been slow, "
        "mostly in the morning when the backups run, although nobody changed the job itself."
    )
    log = "\n".join(
        f"2025-03-02 0{hour}:{minute:02d}:00 INFO report job step {minute} finished in {100 + minute * 3}ms"
        for hour in range(6)
        for minute in range(60)
    )
    paste = f"{context}\n\n{log}\n\nWhich step was the slowest?"
    bundle = ingest_paste(paste)
    note = next(frame for frame in bundle.provider.frames if frame.kind == "note")
    assert note.representation == "full"
    assert note.content == context


def test_an_android_tombstone_is_one_segment_through_its_sections() -> None:
    tombstone = "\n\n".join(
        [
            "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"
            "Build fingerprint: 'acme/phone/phone:14/UP1A/1:user/release-keys'\n"
            "pid: 4242, tid: 4250, name: RenderThread  >>> com.acme.notes <<<\n"
            "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000008",
            "backtrace:\n      #00 pc 000000000004a2f0  /data/app/lib/arm64/libnotes.so (Canvas::draw()+32)\n"
            "      #01 pc 0000000000051c44  /system/lib64/libhwui.so (RenderThread::loop()+96)",
            "stack:\n         0000007fe1a2b3c0  0000000000000000\n         0000007fe1a2b3c8  0000007d1c2b0e40",
        ]
    )
    paste = f"{tombstone}\n\nThe notes app crashes when I rotate the screen. Which frame crashed?"
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report] == ["stack_trace", "prose"]
    assert bundle.report[0].span == (0, len(tombstone))


def test_a_generated_report_whose_list_items_hold_indented_fences_is_one_segment() -> None:
    packages = []
    for name in ("alpha", "beta", "gamma"):
        packages.append(
            f"# {name}\n\nVersion: 1.0\n\n## In both\n\n"
            "*   checking PDF version of manual ... WARNING\n    ```\n    LaTeX errors when creating PDF version.\n"
            "    This typically indicates Rd problems.\n    ```"
        )
    report = "\n\n".join(packages)
    bundle = ingest_paste(f"I ran the reverse-dependency check.\n\n{report}\n\nWhich package is newly broken?")
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


def _pointed_run(count: int) -> str:
    """A shellcheck-style run: a location, the quoted line, a pointer under it with the rule and its level, and
    sometimes a suggestion under "Did you mean:"; no tally closes it."""
    records = []
    for number in range(count):
        record = (
            f"In deploy.sh line {10 + number * 7}:\n    if [ ! -d $dir_{number} ]; then\n"
            "              ^----^ SC2086 (info): Double quote to prevent globbing."
        )
        if number % 2:
            record += f'\n\nDid you mean: \n    if [ ! -d "$dir_{number}" ]; then'
        records.append(record)
    return "\n\n\n".join(records)


def test_a_pointed_linter_run_without_a_tally_is_one_log_segment() -> None:
    paste = f"the linter's output on our deploy script:\n\n{_pointed_run(12)}\n\nWhich of these matter?"
    bundle = ingest_paste(paste)
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [
        ("prose", "frame"),
        ("log", "frame"),
        ("prose", "goal"),
    ]


def test_a_style_checker_run_with_its_progress_and_heading_is_one_log() -> None:
    offences = "\n".join(
        f"app/models/cart.rb:{n}:3: C: Metrics/LineLength: Line is too long. [{90 + n}/80]\n  total = cart.sum\n  ^^^"
        for n in range(1, 9)
    )
    run = f"Inspecting 8 files\n.C...CC.\n\nOffenses:\n\n{offences}\n\n8 files inspected, 8 offenses detected"
    bundle = ingest_paste(f"Which of these are more than style?\n\n{run}")
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [("prose", "goal"), ("log", "frame")]


def test_test_runner_lines_among_a_tests_output_are_not_the_users_words() -> None:
    chunks = [
        f" ✓ tests/unit/cart.test.ts > cart > totals line {n} with every discount applied {n}ms\n"
        f"stdout | tests/unit/cart.test.ts > cart > totals line {n + 1} with every discount applied\n"
        f"[I][cart] total complete {{ lines: {n} }}"
        for n in range(8)
    ]
    run = "\n\n".join(chunks) + "\n\n Test Files  1 failed | 3 passed (4)\n      Tests  2 failed | 40 passed (42)"
    bundle = ingest_paste(f"the vitest run:\n\n{run}\n\nWhich tests fail?")
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


def _double_spaced_install(message: list[str]) -> str:
    """An installer's output with a blank line after every line, as some consoles copy it, ``message`` among it."""
    before = [f"Collecting shopkit-{n}==1.{n}.0" for n in range(1, 8)]
    after = [f"Removing build/shopkit-{n}/tmp" for n in range(1, 8)]
    return "\n\n".join([*before, *message, *after])


def test_a_double_spaced_programs_message_wrapped_mid_sentence_is_part_of_its_run() -> None:
    message = [
        "The following error occurred while trying to add or remove files in the",
        "installation directory:",
        "    [Errno 13] Permission denied: '/usr/local/lib/shop'",
    ]
    bundle = ingest_paste(f"the install on the build box:\n\n{_double_spaced_install(message)}\n\nWhy does it fail?")
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


def test_a_programs_sentence_said_twice_in_its_run_is_part_of_it() -> None:
    install = _double_spaced_install(["Please make the appropriate changes for your system and try again."])
    bundle = ingest_paste(f"two tries:\n\n{install}\n\n{install}\n\nWhy does it fail?")
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


def test_a_table_header_above_the_users_words_in_lowercase_is_not_a_wrapped_sentence() -> None:
    rows = "\n".join(f"ACCEPT     tcp  --  10.0.{n}.0/24          anywhere" for n in range(6))
    chain = f"Chain INPUT (policy DROP)\ntarget     prot opt source               destination\n{rows}"
    blocks = [
        chain,
        *[f"Chain C{n} (1 references)\ntarget     prot opt source               destination" for n in range(6)],
    ]
    paste = "\n\n".join([*blocks, "and the other chain from the controlplane:", chain, "Which rule drops port 443?"])
    bundle = ingest_paste(paste)
    users = [paste[entry.span[0] : entry.span[1]] for entry in bundle.report if entry.kind == "prose"]
    assert users == ["and the other chain from the controlplane:", "Which rule drops port 443?"]


def test_a_programs_sentences_between_its_lines_are_part_of_its_run() -> None:
    steps = [f"> shop@1.0 build:{n}\n> vite build --mode step{n}" for n in range(4)]
    messages = ["Generating runtime types...", "Runtime types generated.", "Found 3 warnings and 0 errors."]
    run = "\n\n".join([steps[0], steps[1], *messages, steps[2], steps[3]])
    bundle = ingest_paste(f"the check script's output:\n\n{run}\n\nWhy is the selection styling gone?")
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


def test_a_programs_banner_under_the_users_introduction_opens_the_output_it_leads_to() -> None:
    banner = [
        "Shell 2.1 (2024-01-05) -- the release name\nCopyright (C) 2024 The Shell Foundation",
        "Shell is free software and comes with no warranty at all.\nYou are welcome to share it under its terms.",
        "Shell is a project with many contributors.\nType 'contributors()' for the list of their names.",
    ]
    output = "> library(dates)\n> run_checks()\n1. Failure: parser reads dates (@test-dates.R#4) ---\n`d` is `NULL`."
    paste = "\n\n".join(["and this is the failing log, with the full messages:", *banner, output, "Why does it fail?"])
    report = ingest_paste(paste).report
    assert [entry.kind for entry in report] == ["prose", "log", "prose"]
    assert paste[slice(*report[1].span)].startswith("Shell 2.1")


_RULE = "-" * 74


def test_a_programs_message_framed_by_rules_is_one_segment_through_its_paragraphs() -> None:
    message = [
        f"$ launch -np 4 solver\n{_RULE}\nThere are not enough slots available to satisfy the 4\nslots requested:",
        "  solver",
        "A slot is the unit where we can launch a process. The number of slots\nis set by the environment:",
        "  1. Hostfile, via slots=N clauses\n  2. The --host parameter, via a :N suffix",
        f"Alternatively, use --oversubscribe to ignore the number of slots.\n{_RULE}",
    ]
    paste = "\n\n".join(["The run on my VM:", *message, "Why does it count fewer slots than cores?"])
    report = ingest_paste(paste).report
    assert [entry.kind for entry in report] == ["prose", "log", "prose"]


def test_a_run_closing_with_its_total_time_is_one_log_through_its_headed_table() -> None:
    steps = "\n".join(f"  {n * 100}   {n * 0.5:.2f}   {-n * 1.25:.3f}   {n % 3}" for n in range(12))
    parts = [
        f"Simulator (2 Sep 2024)\n  using 1 thread per task\nStep Temp E_pair Press\n{steps}\nLoop time of 0.32",
        "Performance: 13341.6 tau/day, 30884.1 timesteps/s\n98.1% CPU use with 2 tasks",
        "Task timing breakdown:\nSection | min time | max time\nPair    | 0.079    | 0.091\nNeigh   | 0.087    | 0.088",
        "Total # of neighbors = 1159\nNeighbor list builds = 3510\nTotal wall time: 0:00:01",
    ]
    paste = "\n\n".join(["The run on two ranks:", *parts, "Why is Neigh slower than Pair?"])
    assert [entry.kind for entry in ingest_paste(paste).report] == ["prose", "log", "prose"]


def test_a_command_a_build_tool_echoes_by_its_full_path_is_part_of_its_output() -> None:
    settings = "\n".join(
        f"\t{key} : {value}" for key, value in [("CC", "gfortran"), ("OPTIM", "-g"), ("EXE", "opt.so")]
    )
    parts = [
        f"Verbose mode is on.\nOptions file found.\n{settings}",
        "/usr/bin/gfortran -c -DRELEASE=R2017b -fPIC -g opt.F90 -o /tmp/opt.o\nWarning: no include directory",
        "/usr/bin/gfortran -shared -g /tmp/opt.o -lmx -o opt.so\nld: warning: creating a DT_TEXTREL in object",
    ]
    paste = "\n\n".join(["The build step:", *parts, "Why does the library crash when it loads?"])
    assert [entry.kind for entry in ingest_paste(paste).report] == ["prose", "log", "prose"]


def test_a_rule_never_closed_frames_nothing() -> None:
    paste = "\n\n".join(
        [f"$ launch -np 4 solver\n{_RULE}\nThere are not enough slots\navailable: 2 of 4", "We need four. Why two?"]
    )
    assert [entry.kind for entry in ingest_paste(paste).report] == ["log", "prose"]


def test_the_users_words_between_two_runs_stay_apart() -> None:
    steps = "\n\n".join(f"> shop@1.0 build:{n}\n> vite build --mode step{n}" for n in range(6))
    for words in ["Then I ran it again.", "Same on the second box."]:
        paste = f"the output:\n\n{steps}\n\n{words}\n\n{steps}\n\nWhy is the selection styling gone?"
        report = ingest_paste(paste).report
        assert [paste[entry.span[0] : entry.span[1]] for entry in report if entry.kind == "prose"][1] == words


def _session(output: list[str]) -> str:
    first = '[root@lab ~]# kind create cluster --config kind.yaml\nCreating cluster "kind" ...\n ✓ Ensuring node image'
    later = "Thanks for using kind!\n[root@lab ~]# kubectl get pod -A\nNAMESPACE     NAME          READY   STATUS\n"
    return "\n\n".join([first, *output, later + "kube-system   cilium-dhxgv  0/1     CrashLoopBackOff"])


def test_a_sessions_output_cut_by_blank_lines_between_two_prompts_is_one_log() -> None:
    output = ['Release "cilium" does not exist. Installing it now.', "You have successfully installed Cilium."]
    paste = f"on my lab vm:\n\n{_session(output)}\n\nWhat is the agent choking on?"
    report = ingest_paste(paste).report
    assert [entry.kind for entry in report] == ["prose", "log", "prose"]


def test_the_users_words_in_a_session_between_two_prompts_stay_apart() -> None:
    words = "ok so I rebuilt the cluster without kube-proxy."
    paste = f"on my lab vm:\n\n{_session([words])}\n\nWhy does it crash?"
    report = ingest_paste(paste).report
    assert len(report) == 5
    assert report[2].kind == "prose" and paste[report[2].span[0] : report[2].span[1]] == words


def test_a_block_opening_with_its_own_prompt_is_not_joined_to_the_session_before_it() -> None:
    table = "$ swiftlint rules\n| identifier | opt-in |\n| --- | --- |\n" + "\n".join(
        f"| rule_{n} | no |" for n in range(12)
    )
    paste = f"here:\n\n$ swiftlint --version\n0.50.3\n\n{table}\n\nWhich rules are errors?"
    report = ingest_paste(paste).report
    assert "table" in [entry.kind for entry in report]


def test_a_programs_short_heading_ending_in_a_colon_is_not_someones_voice() -> None:
    assert not in_someones_voice("Compiler stderr:\nLibrary uuid found: YES")
    assert in_someones_voice("Here is the whole log:")


_SANITIZER = """==5903==ERROR: AddressSanitizer: heap-use-after-free on address 0x60300000ef80 at pc 0x460cb6
READ of size 2 at 0x60300000ef80 thread T0
    #0 0x460cb5 in printf_common (/build/bin/readelf+0x460cb5)
    #1 0x6096a2 in error /src/binutils/elfcomm.c:43:3

0x60300000ef80 is located 0 bytes inside of 19-byte region [0x60300000ef80,0x60300000ef93)
freed by thread T0 here:
    #0 0x4b8ec0 in __interceptor_cfree (/build/bin/readelf+0x4b8ec0)
    #1 0x504895 in process_archive /src/binutils/readelf.c:19368:7

previously allocated by thread T0 here:
    #0 0x4b9048 in __interceptor_malloc (/build/bin/readelf+0x4b9048)

SUMMARY: AddressSanitizer: heap-use-after-free (/build/bin/readelf+0x460cb5) in printf_common
Shadow bytes around the buggy address:
  0x0c067fff9da0: fa fa fa fa fa fa fa fa fa fa fa fa fa fa fa fa
=>0x0c067fff9df0:[fd]fd fd fa fa fa fd fd fd fa fa fa 00 00 00 fa
Shadow byte legend (one shadow byte represents 8 application bytes):
  Addressable:           00
  Heap left redzone:       fa
  Freed heap region:       fd
==5903==ABORTING"""


def test_a_sanitizers_report_is_one_stack_trace_segment_through_its_aborting_line() -> None:
    paste = f"readelf falls over under ASan:\n\n{_SANITIZER}\n\nThen I ran it again.\n\nWhere is it freed?"
    report = ingest_paste(paste).report
    assert [entry.kind for entry in report] == ["prose", "stack_trace", "prose", "prose"]
    assert paste[report[1].span[0] : report[1].span[1]] == _SANITIZER


def test_a_short_run_of_blocks_that_read_as_no_evidence_is_one_document() -> None:
    report = """-t1 -c1 -d30s -R20000 --latency http://localhost:8080/v0/status
Running 30s test @ http://localhost:8080/v0/status
  1 threads and 1 connections
 50.000%   23.28ms
 99.000%    1.90s

  Detailed Percentile spectrum:
       Value   Percentile   TotalCount 1/(1-Percentile)

       0.020     0.000000            5         1.00
       0.951     0.100000        40024         1.11
      23.279     0.500000       200078         2.00"""
    paste = f"load testing our service, the status endpoint:\n\n{report}\n\nWhich run missed the rate?"
    entries = ingest_paste(paste).report
    assert len(entries) == 3
    assert paste[entries[1].span[0] : entries[1].span[1]] == report


def test_a_short_run_of_one_kind_of_evidence_under_its_headings_is_one_document() -> None:
    table = "\n".join(["┌──────┬──────┐", "│ name │ hits │", "├──────┼──────┤", "│ a    │ 1    │", "└──────┴──────┘"])
    heading = "image:latest (debian 12)\n========================\nTotal: 3 (HIGH: 1)"
    scan = f"Report Summary\n\n{table}\n\n{heading}\n\n{table}"
    paste = f"ran the scanner on our image:\n\n{scan}\n\nAnything besides the CVEs?"
    entries = ingest_paste(paste).report
    assert len(entries) == 3
    assert paste[entries[1].span[0] : entries[1].span[1]] == scan


def test_a_command_and_its_outputs_banner_are_joined_to_the_output_a_blank_line_below() -> None:
    rows = "\n".join(f"06:02:{n:02d}  all  {n * 7 % 90}.5  0.00  {n % 9}.5" for n in range(30))
    paste = f"From the box:\n\n$ sar -u\nLinux 6.1 (vm) \t12/07/26\n\n06:02:00  CPU  %user  %nice  %idle\n{rows}"
    report = ingest_paste(paste + "\n\nWhen was the CPU busiest?").report
    assert [entry.kind for entry in report if entry.outcome != "goal"] == ["prose", "table"]


def test_blocks_opening_with_the_same_advice_a_program_prints_after_each_failure_are_its_output() -> None:
    # Each failed fit's warning ends in a blank line and advice in the second person, the next fit's lines under it.
    advice = (
        "Raise the iteration limit so the optimiser can settle (limit=300).\n"
        "You might also want to normalise the inputs as shown in:\n"
        "    https://docs.example.org/preprocessing.html"
    )
    fits = [
        f"[CV] END C={c}, penalty=l2, solver=lbfgs; total time=   0.1s\n"
        f"/venv/lib/fit/_optim.py:599: ConvergenceWarning: lbfgs stopped after 300 iterations (C={c}):\n"
        "STOP: ITERATION LIMIT REACHED"
        for c in (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
    ]
    output = "\n\n".join([fits[0], *(f"{advice}\n{fit}" for fit in fits[1:])])
    paste = f"My grid search prints this:\n\n{output}"
    kinds = [entry.kind for entry in ingest_paste(paste + "\n\nWhich fits failed?").report if entry.outcome != "goal"]
    assert kinds == ["prose", "log"]


def test_a_go_dumps_signal_lines_and_registers_around_its_goroutines_are_one_trace() -> None:
    goroutines = "\n\n".join(
        f"goroutine {n} [select]:\nshop/pool.(*worker).loop{n}(0xc0002faa88)\n\tshop/pool/x.go:{n + 10} +0x1b4"
        for n in range(1, 5)
    )
    registers = "\n".join(f"{name}    0x{n:x}" for n, name in enumerate(["rax", "rbx", "rcx", "rip", "rflags", "cs"]))
    dump = f"SIGQUIT: quit\nPC=0x4723a1 m=0 sigcode=0\n\n{goroutines}\n\n{registers}"
    report = ingest_paste(f"It hangs, so I sent it SIGQUIT:\n\n{dump}\n\nWhat is it waiting on?").report
    assert [entry.kind for entry in report if entry.outcome != "goal"] == ["prose", "stack_trace"]


_SCRIPT = """#!/bin/bash

#------------------------------
# Nightly load: SFTP to S3 to the raw layer
#------------------------------

##clear

# Change user first
#sudo -su loader

echo "Truncating the load tables"
hive -f truncate_tables.sql 2> hive.log
if [ $? -ne 0 ]; then echo "truncate failed" ; exit 1; fi;

## Verifying that the fields are read and written as in the source file.
##diff <(cut -c 1-14 aws_file.dat) <(cut -c 1-14 sftp_file.dat)

now=$(date +"%T")
echo "Load finished at : $now"
"""


def test_a_script_cut_by_blank_lines_into_comments_and_commands_is_one_segment() -> None:
    paste = f"Our nightly load runs this script:\n\n{_SCRIPT}\nWhy does the truncate step fail?"
    bundle = ingest_paste(paste)
    # Its shebang, its commented-out commands and its comment paragraphs are the script's, not the user's words.
    assert [entry.kind for entry in bundle.report] == ["prose", "code", "prose"]


def test_a_programs_lines_of_words_said_again_but_for_their_numbers_are_its_output() -> None:
    run = "Logging initialized using configuration in hive-log4j.properties\n" + "\n".join(
        f"OK\nTime taken: 0.{n}97 seconds" for n in range(6)
    )
    bundle = ingest_paste(f"Here is the hive.log of the run:\n\n{run}\n\nWhich query took longest?")
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


_SKETCH = """/***
    Written by a maintainer of the examples.
    The checksum algorithm was generated by a tool, under its licence.

    A checksum is a simple way of checking whether data has changed or become corrupted.
    This example reads every byte of the store and prints what it sums to.
***/

#include <Store.h>

void setup() {
  Serial.begin(9600);
  Serial.println(store_sum(), HEX);
}
"""


def test_a_source_file_whose_block_comment_holds_paragraphs_is_one_segment() -> None:
    bundle = ingest_paste(f"Here is the sketch, unmodified from the package:\n\n{_SKETCH}\nWhy does it not compile?")
    # The comment's sentences are the file's, not the user's: the file is one segment between the user's words.
    assert [entry.kind for entry in bundle.report] == ["prose", "code", "prose"]


def test_a_block_comment_is_opened_at_a_lines_start_and_closed_anywhere() -> None:
    assert _comment_open_after("/***\n    Written by a maintainer.", False)
    assert not _comment_open_after("  still the comment's words ***/\n#include <Store.h>", True)
    # A request's header is no comment: "*/*" holds a closing mark and no opening one.
    assert not _comment_open_after("GET / HTTP/1.1\nAccept: */*\nHost: cache.example", False)


_AGENT_START = """==> Starting the agent...
==> Agent running!

           Version: '1.9.2'
         Node name: 'build-box.local'
        Datacenter: 'dc1'

==> Log data will now stream in as it occurs:

    2026/12/07 18:20:57 [INFO] raft: Node at 127.0.0.1:8300 [Follower] entering Follower state
    2026/12/07 18:20:58 [WARN] raft: Heartbeat timeout reached, starting election
    2026/12/07 18:20:58 [ERR] agent: failed to sync remote state: No cluster leader"""


def test_a_tools_step_headings_and_its_listing_open_its_log() -> None:
    bundle = ingest_paste(f"My agent never syncs:\n\n{_AGENT_START}\n\nWhy is there no cluster leader?")
    # The "==>" headings are the tool's steps, not code nor the user's words: one log from the first of them.
    assert [entry.kind for entry in bundle.report] == ["prose", "log", "prose"]


def test_a_scripts_title_comment_before_its_lines_is_the_scripts() -> None:
    script = "\n\n".join(
        ["# 2d circle of particles inside a box with walls", "units lj\ndimension 2\natom_style atomic"]
        + [f"fix {n} all wall/lj93 xlo 0.0 1 1 2.5\nthermo {n * 100}" for n in range(5)]
    )
    bundle = ingest_paste(
        f"This is the input script it ran:\n\n{script}\n\nWhy is the neighbour list rebuilt so often?"
    )
    # The title comment opens the script's run of blocks: one segment of evidence between the user's words.
    assert [entry.outcome for entry in bundle.report] == ["frame", "frame", "goal"]
