"""The shapes of stack traces, runtime by runtime: headers, frames and the lines between.

A trace is read line by line: a *header* opens a section (an exception and its
message, a panic, a cause), *frames* name the code that was running, and
*context* lines belong to the trace without being either (a Python frame's
source and carets, ``Stack trace:``, a kernel register dump, an inner
exception's end marker). Kernel reports arrive inside a dmesg or console log,
so every test first skips a ``[ 12.345678]`` uptime stamp and its ``[ T42]``
tag. Every pattern is anchored and bounded, so a failed match costs time linear
in the line's examined prefix (``signals.LINE_PREFIX``, as for every line shape).

Runtimes covered: Python (chained causes, 3.11 carets, exception groups), JVM
(``Caused by:``, ``Suppressed:``, ``... N more``), .NET (``--->`` inner
exceptions and their end markers), Node, Go (panics, ``fatal error:``,
goroutine dumps with ``created by`` and ``fp=/sp=/pc=``), Rust (panics and
backtraces), Ruby and Rails, PHP, Dart and Flutter, Elixir and Erlang, Swift
traps and Apple crash reports, C/C++ debuggers and sanitizers (``#0 0x… in``,
``==42==ERROR: AddressSanitizer``), and the Linux kernel (oops, BUG, WARNING,
KASAN, lockdep, hung tasks: ``Call Trace:``, ``? func+0x…/0x…``, ``RIP:``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from organs.stomach.core.shapes.signals import LINE_PREFIX
from organs.stomach.core.shapes.timestamps import UPTIME

__all__ = [
    "STRONG_HEADERS",
    "is_caret_line",
    "is_go_function",
    "is_idle_frame",
    "is_thread_heading",
    "is_trace_context",
    "is_trace_frame",
    "kernel_prefix_end",
    "library_frame",
    "trace_header",
]

# "[ 1191.669874] " and "[ 1191.669874][ T1043] " (the printk caller tag, thread or CPU).
_KERNEL_PREFIX = re.compile(rf"{UPTIME}(?:\[\s{{0,6}}[TC]\d{{1,10}}\])? ?")


def kernel_prefix_end(line: str) -> int:
    """Where a line's text starts after a dmesg uptime stamp (0 when it has none)."""
    if not line.startswith("["):
        return 0
    match = _KERNEL_PREFIX.match(line, 0, 64)
    return match.end() if match is not None else 0


def _opens_with(pattern: str) -> Callable[[str], bool]:
    """A test of whether a line's text (after any kernel prefix) opens with ``pattern``."""
    match = re.compile(pattern).match

    def opens_with(line: str) -> bool:
        return match(line, kernel_prefix_end(line), LINE_PREFIX) is not None

    return opens_with


# Whether a line names code that was running (a frame), in any covered runtime.
is_trace_frame = _opens_with(
    # JVM, .NET, JavaScript and Rust "at" frames: at a.b.C.m(File.java:12), at f (x.js:1:2), at /x.rs:3:5
    r"\s*at (?:async )?[^\s(]{1,300}(?:\(| \(|:\d)"
    # Python
    r"|\s*File \"[^\"]{1,400}\", line \d"
    # elided JVM frames
    r"|\s*\.\.\. \d+ (?:more|common frames omitted)"
    # Go: \t/path/file.go:12 +0x1d (or the runtime's asm_amd64.s), with fp= sp= pc= in runtime dumps
    r"|\s+\S{1,300}\.(?:go|s):\d+(?: \+0x[0-9a-f]+)?(?: fp=0x[0-9a-f]+ sp=0x[0-9a-f]+ pc=0x[0-9a-f]+)?\s*$"
    r"|created by \S"
    # Rust backtrace: "  12: std::rt::lang_start"
    r"|\s*\d{1,4}: (?:[\w<>$]+::|0x[0-9a-f]+ - )"
    # Ruby and Rails: "app/x.rb:12:in `m'", "from app/x.rb:12:in 'm'", "actionpack (5.1) lib/x.rb:63:in `call'"
    r"|\s*(?:from )?(?:[\w.-]{1,100} \([\w.]{1,40}\) )?[^\s:]{1,300}:\d+:in [`'‘]"
    # numbered frames: gdb and sanitizers (#0 0x4b2b3c in f), PHP (#0 /x.php(20): f(), #1 [internal
    # function]: g, #2 {main}) and Dart (#0      f (package:a/b.dart:7:24))
    r"|\s*#\d{1,4}\s+(?:0x[0-9a-f]{1,16} in \S|\[internal function\]|\{main\}|[^\s(]{1,300}\(\d+\): "
    r"|[^(\n]{1,300}\((?:package|dart|file|org-dartlang-sdk|https?):[^)\n]{0,300}\))"
    # gdb's frames that name no address (an inlined or the innermost one): "#0  g_hash (v=0x0) at ghash.c:1871"
    r"|\s*#\d{1,4}\s+[^\s(]{1,300} \([^\n]{0,3000}\) (?:at \S{1,300}:\d+|from /\S{1,300})\s*$"
    # lldb: "  * frame #0: 0x0000000100003f2c shop`cart_total(cart=0x0) at cart.c:12:18"
    r"|\s*(?:\* )?frame #\d{1,4}: 0x[0-9a-f]{1,16} \S"
    # kernel: " ? func+0x1a/0x30 [mod]", "[<ffffffff81>] func+0x1a/0x30", "RIP: 0010:func+0x1c/0x30"
    r"|\s*(?:\[<[0-9a-f]{8,16}>\] )?(?:\? )?[\w.$]{1,200}\+0x[0-9a-f]{1,16}/0x[0-9a-f]{1,16}\b"
    r"|\s*RIP: [0-9a-f]{4}:"
    # Apple crash reports: "1   Shop   0x0000000100f0e0d0 CartView.body.getter + 120"
    r"|\d{1,4}\s+\S{1,200}\s+0x[0-9a-f]{8,16} \S[^\n]{0,300} \+ \d{1,10}\s*$"
    # Elixir and Erlang: "    (shop 0.1.0) lib/shop/cart.ex:12: Shop.Cart.total/1"
    r"|\s+\([\w]{1,100} [\w.+-]{1,40}\) [^\s:]{1,300}:\d+: "
)


_GO_HEAD = re.compile(r"[\w./*()\[\]{},-]{1,300}")
_GO_ARGUMENTS = re.compile(r"(?:\.\.\.|[0-9a-fx, {}?.]{0,300})\)")


def is_go_function(line: str) -> bool:
    """Whether a line is a Go trace's function line: ``main.(*T).run(0xc000010000, {0x1, 0x2})``.

    Only a frame when a ``\\tfile.go:12 +0x1d`` line follows it, which the caller checks: a
    call such as ``console.log()`` has the same shape.
    """
    if not line.endswith(")") or line.startswith((" ", "\t")) or len(line) > LINE_PREFIX:
        return False
    head, _, arguments = line.rpartition("(")
    return (
        ("." in head or arguments.startswith("0x"))
        and _GO_HEAD.fullmatch(head) is not None
        and _GO_ARGUMENTS.fullmatch(arguments) is not None
    )


_HEADER = re.compile(
    r"\s*(?:"
    r"(?P<python>(?:\+ )?(?:Exception Group )?Traceback \(most recent call last\):)"
    r"|(?P<jvm_thread>Exception in thread \"[^\"]{0,200}\" )"
    r"|(?P<cause>Caused by: )"
    r"|(?P<suppressed>Suppressed: )"
    r"|(?P<inner>-{1,3}> )"
    r"|(?P<go_panic>panic: |fatal error: )"
    r"|(?P<goroutine>goroutine \d+ \[)"
    r"|(?P<rust>thread '[^']{0,200}' panicked at )"
    r"|(?P<dotnet>Unhandled [Ee]xception[.:] )"
    # Swift's runtime trap, a sanitizer's report, Elixir's "** (RuntimeError) message"
    r"|(?P<native>Fatal error: |==\d{1,10}==ERROR: \w{1,40}Sanitizer|\*\* \([\w.]{1,200}\) )"
    r"|(?P<dart>Unhandled exception:\s*$|═+╡ EXCEPTION CAUGHT BY )"
    r"|(?P<php>PHP (?:Fatal error|Parse error|Warning|Notice|Deprecated): |(?:PHP )?Fatal error: Uncaught "
    r"|(?:Uncaught )?exception '[\w\\]{1,200}' with message )"
    r"|(?P<kernel>(?:BUG|Oops): |kernel BUG at |WARNING: (?:CPU: \d|possible |suspicious )|INFO: task "
    r"|general protection fault|Kernel panic - not syncing|Unable to handle kernel |-{6,}\[ cut here \]-{6,})"
    # Rails: " ActionController::RoutingError (No route matches [GET] "/x"):"
    r"|(?P<rails>(?:[A-Z]\w{0,100}::){1,10}[A-Z]\w{0,100} \([^\n]{0,300}\):\s*$"
    r"|[A-Z]\w{0,100}(?:Error|Exception) \([^\n]{0,300}\):\s*$)"
    # An exception type opening the line and followed by a colon or the line end:
    # "java.lang.IllegalStateException: boom", "TypeError: x is undefined", "ValueError", and a wrapper naming
    # what it wraps: "ray.exceptions.RayTaskError(ActorDiedError): …".
    # A sentence that mentions an error never opens with the bare type name and a colon.
    r"|(?P<typed>(?:Uncaught )?(?:[A-Za-z_$][\w$]*(?:\.|::))*[\w$]*(?:Error|Exception|Panic|Fault|Throwable)"
    r"(?:\([\w.]{1,100}\))?(?::|\s*$))"
    r")"
)

# Headers only a runtime prints: a block that opens with one is a trace even with no frame below it.
STRONG_HEADERS = frozenset(
    ["python", "jvm_thread", "go_panic", "goroutine", "rust", "dotnet", "dart", "php", "rails", "native"]
)


def trace_header(line: str) -> str | None:
    """The kind of exception header the line is, or ``None``."""
    match = _HEADER.match(line, kernel_prefix_end(line), LINE_PREFIX)
    if match is None:
        return None
    return match.lastgroup


# A debugger's heading over one thread's frames: gdb's "Thread 2 (Thread 0x7f… (LWP 18636) "name"):" (or "(LWP n)",
# "(process n)") and lldb's "* thread #1, queue = 'main', stop reason = …".
_THREAD_HEADING = (
    r"Thread \d{1,6} \((?:Thread 0x[0-9a-f]{1,16}|LWP \d{1,10}|process \d{1,10})|\*? ?thread #\d{1,6}(?:,|:|\s*$)"
)
is_thread_heading = _opens_with(rf"\s*(?:{_THREAD_HEADING})")

# Whether a line belongs to a trace between its headers and frames (markers, carets, registers).
is_trace_context = _opens_with(
    r"\s*(?:"
    # markers between sections and around frames
    r"Stack trace:|stack backtrace:|Call Trace:|Backtrace:|</?(?:IRQ|TASK|NMI|EOI|SOFTIRQ)>"
    r"|--- End of (?:inner exception )?stack trace|-{3} End of stack trace from previous location"
    r"|During handling of the above exception|The above exception was the direct cause"
    r"|nested exception is:?|thrown in \S|note: run with `RUST_BACKTRACE"
    r"|\[signal SIG|exit status \d|goroutine \d+ gp=|Receiver: |Tried calling: |Thread \d{1,4}(?: Crashed)?:"
    f"|{_THREAD_HEADING}"
    r"|(?:READ|WRITE) of size \d|SUMMARY: \w{1,40}Sanitizer"
    # Python's source under a frame: carets and squiggles (3.11+)
    r"|[~^]{1,300}\s*$"
    # kernel report context: who, where, registers, the code bytes, allocation sections
    r"|CPU: \d{1,5} (?:PID|UID): |Hardware name: |Modules linked in:|Code: |Workqueue: |Comm: "
    r"|R[A-Z0-9]{1,3}: [0-9a-f]{4}|[A-Z0-9]{2,3}: [0-9a-f]{8,16}|CR2: |EFLAGS: |FS: |CS: |DR[0-9]: "
    r"|-{2,3}\[ end (?:trace|Kernel panic)|={20,}\s*$|(?:Allocated|Freed) by task \d|The buggy address "
    r"|Memory state around|lock\(|\*\*\* DEADLOCK|other info that might help|stack dependency|-> #\d|#\d: \("
    r")"
)

# Paths of runtimes, frameworks and installed packages: a frame elsewhere is the application's.
_LIBRARY_FRAME = re.compile(
    r"site-packages|dist-packages|node_modules|/usr/lib|/usr/local/lib|\.cargo/registry|/rustc/|/vendor/|/gems/"
    r"|<frozen |\(internal/|node:internal|\bat (?:java|javax|jdk|sun|kotlin|scala|org\.springframework|org\.apache)\."
    r"|\bat (?:System|Microsoft)\.|\bat async (?:System|Microsoft)\.|\b(?:std|core|alloc|tokio)::|runtime/|GOROOT"
    r"|\(dart:|package:flutter/|\[internal function\]|\{main\}"
)


def library_frame(line: str) -> bool:
    """Whether a frame line runs a runtime's, a framework's or an installed package's code, not the application's."""
    return _LIBRARY_FRAME.search(line) is not None


# The calls a thread waits in when it has nothing to do (an event loop's poll, a pool's condition wait, a sleep), in
# the C library, macOS, Windows and Go's runtime. A lock wait is not here: a thread stuck on a mutex may be the story.
_IDLE_CALL = re.compile(
    r"(?<![\w.])(?:__)?(?:poll|ppoll|epoll_p?wait|select|pselect6?|kevent(?:64)?|pthread_cond_(?:timed)?wait"
    r"|futex_wait|(?:clock_)?nanosleep|usleep|sem_(?:timed)?wait|psynch_cvwait|semwait_signal|workq_kernreturn"
    r"|mach_msg2?_trap|sigwait|sigtimedwait|accept4?|WaitForSingleObject(?:Ex)?|WaitForMultipleObjects(?:Ex)?"
    r"|(?:Nt|Zw)(?:WaitFor\w+|DelayExecution|RemoveIoCompletion)|GetQueuedCompletionStatus(?:Ex)?"
    r"|runtime\.gopark|runtime_pollWait)(?:@@[\w.]+)?(?:\s?\(|\s*\+|\s*$)"
)


def is_idle_frame(line: str) -> bool:
    """Whether a frame line is a thread waiting for work: ``#0  0x7f… in poll () from /lib64/libc.so.6``."""
    return _IDLE_CALL.search(line) is not None


_CARETS = re.compile(r"\s*[~^]+\s*")


def is_caret_line(line: str) -> bool:
    """Whether a line is only the carets or squiggles under a frame's source (Python 3.11+): it says nothing the
    source line does not."""
    return _CARETS.fullmatch(line) is not None
