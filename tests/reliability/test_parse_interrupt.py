"""Ctrl-C while a file is being parsed never hangs the run.

Every parse runs on one big-stack thread (``syncfree_lint.parse``); the calling thread waits for
the reply. A child process parses small sources in a loop while another thread sends SIGINT to
the main thread every fraction of a millisecond, so interrupts land at every point of the
hand-over, including just after the reply arrived. The loop must finish: each interrupt either
stops one parse (``KeyboardInterrupt`` out of ``on_parse_thread``) or comes after it, and a parse
that was not interrupted returns its own module.
"""
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent('''
    import signal, threading, time
    import libcst as cst
    from syncfree_lint.parse import on_parse_thread

    armed = False
    def handler(signum, frame):  # one KeyboardInterrupt per armed parse, like one Ctrl-C
        global armed
        if armed:
            armed = False
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    done = False
    main = threading.get_ident()
    def pester():
        while not done:
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.0001)
    threading.Thread(target=pester, daemon=True).start()
    parses = interrupts = 0
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        source = f"x = {parses}\\n"
        try:
            armed = True
            module = on_parse_thread(cst.parse_module, source)
            armed = False
            assert module.code == source, (module.code, source)
            parses += 1
        except KeyboardInterrupt:
            interrupts += 1
    done = True
    print(parses, interrupts)
''')


@pytest.mark.skipif(not hasattr(__import__("signal"), "pthread_kill"), reason="needs POSIX signals")
def test_interrupts_during_parses_never_hang():
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("a parse interrupted by SIGINT hung the caller")
    assert proc.returncode == 0, proc.stderr[-3000:]
    parses, interrupts = map(int, proc.stdout.split())
    print(f"\n[parse interrupt] parses={parses} interrupts={interrupts}")
    assert parses > 100 and interrupts > 100, "the loop should both parse and be interrupted many times"
