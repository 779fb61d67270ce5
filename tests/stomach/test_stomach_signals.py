"""Alerts and trace shapes, line by line, on small lines written for these tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from organs.stomach.core.shapes.line_shapes import closes_run
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.shapes.trace_shapes import is_go_function, is_trace_frame, trace_header

ALERTS = [
    "2024-05-01 10:00:00 ERROR payment failed",
    "[ERROR] Failed to execute goal on project shop",
    "[warn] disk almost full",
    "E/AndroidRuntime( 1234): FATAL EXCEPTION: main",
    "05-01 10:00:00.123  1702  2395 E ActivityManager: ANR in com.shop",
    "CRIT temperature above threshold",
    "npm ERR! code ERESOLVE",
    'level=error msg="cannot reach upstream"',
    '10.0.0.7 - - [01/May/2024:10:00:00 +0000] "GET /cart HTTP/1.1" 404 153 "-" "curl/8.0"',
    '10.0.0.7 - - [01/May/2024:10:00:00 +0000] "POST /pay HTTP/1.1" 502 0',
    "2024-05-01 10:00:00 10.0.0.1 GET /admin - 443 - 10.0.0.7 Mozilla/5.0 - 403 0 0 12",
    '{"ts":1714557600,"status":500,"uri":"/pay"}',
    "[GIN] 2024/05/01 - 10:00:00 | 404 |  1.2ms | 10.0.0.7 | GET /missing",
    "BUILD FAILURE",
    "--- FAIL: TestCheckout (0.01s)",
    "BUG: KASAN: use-after-free in sock_close+0x1a/0x30",
    "panic: runtime error: index out of range [3] with length 3",
    "thread 'main' panicked at src/main.rs:4:5:",
    "Traceback (most recent call last):",
    "java.lang.IllegalStateException: cart is empty",
    "TypeError: Cannot read properties of undefined (reading 'id')",
    "src/cart.c:12:5: error: unknown type name 'cart_t'",
    "error[E0308]: mismatched types",
    "fatal: not a git repository",
    "Connection to the database failed after 3 retries",
    "Segmentation fault (core dumped)",
    "make: *** [Makefile:12: cart.o] Error 1",
    "exit status 1",
    "Jul  1 20:13:23 mac kernel[0]: tls_session_callback_write.434 error 22",
    "Process finished with exit code 137",
    "subprocess.CalledProcessError: Command 'make' returned non-zero exit status 2.",
    "Main process exited, code=exited, status=1/FAILURE",
    "===== 3 failed, 41 passed in 0.52s =====",
    "Tests run: 12, Failures: 2, Errors: 0, Skipped: 0",
    "FAILED (failures=1)",
    "Tests:       1 failed, 9 passed, 10 total",
]

ORDINARY = [
    "2024-05-01 10:00:00 INFO payment accepted",
    "[INFO] BUILD SUCCESS",
    "05-01 10:00:00.123  1702  2395 I ActivityManager: Start proc com.shop",
    "npm info it worked if it ends with ok",
    '10.0.0.7 - - [01/May/2024:10:00:00 +0000] "GET /cart HTTP/1.1" 200 404 "-" "curl/8.0"',
    '10.0.0.7 - - [01/May/2024:10:00:00 +0000] "GET /errors/404.html HTTP/1.1" 304 0',
    "2024-05-01 10:00:00 10.0.0.1 GET /shop - 443 - 10.0.0.7 Mozilla/5.0 - 200 0 0 404",
    '{"ts":1714557600,"status":200,"uri":"/pay"}',
    "status=200 duration=12ms",
    "===== 44 passed in 0.52s =====",
    "0 failed, 12 passed",
    "Tests run: 12, Failures: 0, Errors: 0, Skipped: 0",
    "errors: 0",
    "completed with error 0",
    "exit status 0",
    "Process finished with exit code 0",
    "\tat com.shop.ExceptionMapper.toResponse(ExceptionMapper.java:31)",
    "No failures were recorded during the run",
    "the error budget for this quarter is healthy",
    "ok  \tgithub.com/acme/shop\t0.012s",
    "",
]


@pytest.mark.parametrize(("line", "alert"), [(line, True) for line in ALERTS] + [(line, False) for line in ORDINARY])
def test_alert_lines_and_ordinary_lines(line: str, alert: bool) -> None:
    assert is_alert(line) == alert, line


def test_alerts_are_exactly_the_alert_set() -> None:
    lines = ALERTS + ORDINARY
    assert {line for line in lines if is_alert(line)} == set(ALERTS)


FRAMES = [
    "\tat com.shop.Cart.add(Cart.java:42)",
    "    at getUser (/srv/app/users.js:12:19)",
    "   at Shop.Cart.Add(Item item) in C:\\src\\Cart.cs:line 42",
    '  File "/srv/app/cart.py", line 10, in add',
    "\t... 12 more",
    "\t/home/me/shop/main.go:12 +0x1d",
    "\t/usr/local/go/src/runtime/panic.go:884 +0x213 fp=0xc000 sp=0xc001 pc=0x4321",
    "created by net/http.(*Server).Serve in goroutine 1",
    "  12: std::rt::lang_start_internal",
    "app/models/cart.rb:12:in `add'",
    "\tfrom bin/shop:3:in `<main>'",
    "  activesupport (7.0.1) lib/active_support/callbacks.rb:99:in `run'",
    "#0 /var/www/shop/src/Cart.php(42): Shop\\Cart->add(Object(Item))",
    "#1 [internal function]: Shop\\Router->dispatch()",
    "#2 {main}",
    "#0      Cart.add (package:shop/cart.dart:42:7)",
    "#1      main.<anonymous closure> (file:///home/me/shop/bin/main.dart:7:24)",
    "    #0 0x4b2b3c in cart_add /src/cart.c:12:3",
    " ? __might_fault+0x5a/0xb0",
    "[   12.345678]  dump_stack+0x5b/0x8b",
    "[ 1191.669874][ T1043]  kasan_report+0xe/0x20 [kasan]",
    "RIP: 0010:cart_alloc+0x1c/0x30",
]

NOT_FRAMES = ["at the store we use Java", "See cart.rb for details", "#1 priority is checkout", "created the cart"]


@pytest.mark.parametrize(("line", "frame"), [(line, True) for line in FRAMES] + [(line, False) for line in NOT_FRAMES])
def test_frames_of_each_runtime_and_sentences_that_are_not(line: str, frame: bool) -> None:
    assert is_trace_frame(line) == frame, line


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Traceback (most recent call last):", "python"),
        ("  + Exception Group Traceback (most recent call last):", "python"),
        ('Exception in thread "main" java.lang.IllegalStateException: x', "jvm_thread"),
        ("Caused by: java.io.IOException: disk full", "cause"),
        ("\tSuppressed: java.io.IOException: close failed", "suppressed"),
        (" ---> System.IO.IOException: disk full", "inner"),
        ("panic: assignment to entry in nil map", "go_panic"),
        ("fatal error: all goroutines are asleep - deadlock!", "go_panic"),
        ("goroutine 7 [running]:", "goroutine"),
        ("thread 'main' panicked at src/main.rs:4:5:", "rust"),
        ("Unhandled exception. System.InvalidOperationException: empty", "dotnet"),
        ("Unhandled exception:", "dart"),
        ("PHP Fatal error:  Uncaught Exception: empty cart in /srv/Cart.php:12", "php"),
        ("exception 'RuntimeException' with message 'empty' in /srv/Cart.php:12", "php"),
        ('ActionController::RoutingError (No route matches [GET] "/cart"):', "rails"),
        ("NoMethodError (undefined method `total' for nil):", "rails"),
        ("[   12.345678] BUG: KASAN: slab-out-of-bounds in cart_add+0x1a/0x30", "kernel"),
        ("WARNING: CPU: 0 PID: 1 at mm/slab.c:12 kfree+0x1/0x2", "kernel"),
        ("Kernel panic - not syncing: Fatal exception", "kernel"),
        ("java.lang.IllegalStateException: boom", "typed"),
    ],
)
def test_headers_of_each_runtime(line: str, kind: str) -> None:
    assert trace_header(line) == kind


def test_go_function_lines() -> None:
    assert is_go_function("main.(*Cart).Add(0xc000010000, {0x1, 0x2})")
    assert is_go_function("main.main()")
    assert is_go_function("net/http.HandlerFunc.ServeHTTP(0xc00008e000?, {0x7c7e18?, 0xc0000a4000?})")
    assert not is_go_function("print(cart total)")
    assert not is_go_function("    cart.add()")


# --- properties -------------------------------------------------------------------------------


def test_every_status_of_an_access_log_line_is_an_alert_exactly_when_4xx_or_5xx() -> None:
    for status in range(100, 600):
        line = f'10.0.0.7 - - [01/May/2024:10:00:00 +0000] "GET /cart/{status} HTTP/1.1" {status} {status}'
        assert is_alert(line) == (status >= 400), line


@given(st.integers(min_value=0, max_value=9_999_999), st.sampled_from(["failed", "failures", "errors", "failing"]))
def test_a_count_is_an_alert_exactly_when_it_is_not_zero(count: int, word: str) -> None:
    assert is_alert(f"==== {count} {word}, 12 passed in 0.52s ====") == (count > 0)


@given(st.integers(min_value=0, max_value=255))
def test_an_exit_status_is_an_alert_exactly_when_it_is_not_zero(status: int) -> None:
    assert is_alert(f"process exited with exit status {status}") == (status > 0)
    assert is_alert(f"Process finished with exit code {status}") == (status > 0)


@given(st.text(max_size=200))
def test_alerts_survive_a_clock_in_front_and_ordinary_words_after(text: str) -> None:
    for alert in ("panic: boom", "[ERROR] boom", "Traceback (most recent call last):"):
        assert is_alert(f"2024-05-01 10:00:00 {alert} {text}")


@pytest.mark.parametrize(
    ("line", "closes"),
    [
        ("Build completed unsuccessfully in 0:26:43", True),
        ("Build finished in 12.5s", True),
        ("Total wall time: 0:00:01", True),
        ("Total time: 3.2 s", True),
        ("Total time spent was large", False),
        ("Build completed for the shop target", False),
    ],
)
def test_a_runs_last_word_on_how_long_it_took_closes_it(line: str, closes: bool) -> None:
    assert closes_run(line) is closes
