#!/usr/bin/python3
"""The moonflow REPL driven through a real pseudo-terminal (Python standard library only).

Checks what only a terminal shows: Ctrl-C at the prompt clears the line and the REPL lives on;
Ctrl-C stops `while true do end`, a loop of ops typed at the prompt and a JIT-compiled loop of ops
loaded with dofile, with globals and tensors intact; repeated Ctrl-C in compiled Lua that cannot be
stopped in place prints a note and never ends the process; help() prints once; Tab after `a:`
and `m:` offers methods (not a module's data fields); `=1+1` prints 2; history is in
$HOME/.moonflow_history after a SIGKILL and comes back with the Up key; exit() leaves with 0.
usage: repl_pty.py path/to/moonflow
"""
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import sys
import tempfile
import termios
import time

MF = os.path.abspath(sys.argv[1])
HOME = tempfile.mkdtemp(prefix='mf_pty_')
FAILS = []
PROMPT = 'mf> '
SESSIONS = []  # killed at the end, so a failed check never leaves a REPL spinning


class Session:
    def __init__(self):
        env = dict(os.environ, HOME=HOME, TERM='xterm')
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(MF, [MF], env)
        SESSIONS.append(self)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack('HHHH', 24, 100, 0, 0))
        self.buf = ''
        self.status = None

    def read_until(self, pattern, timeout=20.0, what=''):
        """Consumes output up to and including the regex; returns what came before it and the match."""
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.buf)
            if m:
                before, self.buf = self.buf[:m.start()], self.buf[m.end():]
                return before + m.group(0)
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError('timed out waiting for %r (%s); output so far: %r' % (pattern, what, self.buf[-2000:]))
            r, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b''
                if not data:
                    raise AssertionError('REPL ended while waiting for %r (%s); output: %r' % (pattern, what, self.buf[-2000:]))
                self.buf += data.decode('utf-8', 'replace')

    def send(self, text):
        os.write(self.fd, text.encode())

    def line(self, text, what=''):
        """Types a line and returns the output up to the next primary prompt (echo included)."""
        self.send(text + '\r')
        return self.read_until(r'(?m)^mf> ', what=what or text)

    def interrupt(self, text, echo, what, after=0.5):
        """Types a statement that keeps running, presses Ctrl-C once it has run for `after` seconds and
        returns the output up to the next primary prompt (echo: a regex of the statement's echo)."""
        self.send(text + '\r')
        self.read_until(echo)
        time.sleep(after)
        self.send('\x03')
        return self.read_until(r'(?m)^mf> ', what=what)

    def alive(self):
        pid, _ = os.waitpid(self.pid, os.WNOHANG)
        return pid == 0

    def wait(self, timeout=20.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                os.read(self.fd, 65536)  # drain, so the child never blocks on a full terminal
            except OSError:
                pass
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                return self.status
            time.sleep(0.05)
        raise AssertionError('REPL did not exit')


def check(cond, what, detail=''):
    if not cond:
        FAILS.append('%s: %s' % (what, detail))
        print('FAIL: %s %s' % (what, detail[-1500:]))


def has_value(out, value):
    """True when a line of the output (after the echoed command) is exactly value."""
    return value in [l.strip() for l in out.replace('\r', '').split('\n')[1:]]


def main():
    s = Session()
    s.read_until(PROMPT, what='banner')
    s.line('x = 42; t = mf.tensor{{1, 2}, {3, 4}}')

    # Ctrl-C at an idle prompt: the typed text is dropped, a fresh prompt, the REPL lives on
    s.send('this is not lua')
    s.read_until('not lua')
    s.send('\x03')
    s.read_until(r'\^C\r\n' + PROMPT, what='fresh prompt after Ctrl-C')
    check(s.alive(), 'Ctrl-C at the prompt ended the REPL')
    out = s.line('x')
    check(has_value(out, '42'), 'the line was not cleared by Ctrl-C (or x was lost)', out)
    s.send('for i = 1, 3 do\r')
    s.read_until(r'\.\.> ', what='continuation prompt')
    s.send('\x03')
    s.read_until(r'\^C\r\n' + PROMPT, what='Ctrl-C drops an unfinished statement')
    out = s.line('x + 1')
    check(has_value(out, '43'), 'the unfinished statement survived Ctrl-C', out)

    # Ctrl-C during a pure-Lua loop typed at the prompt
    out = s.interrupt('while true do end', 'while true do end\r\n', 'interrupted while true do end')
    check('stdin:1: interrupted' in out, 'while true do end was not interrupted at the user line', out)
    out = s.line('x, t:get(2, 1)')
    check(has_value(out, '42\t3'), 'state lost after interrupting a loop', out)

    # Ctrl-C during a loop of ops typed at the prompt: the tensor keeps its last value
    out = s.interrupt('a = mf.ones(2, 2); n = 0; while true do a = a + 1; n = n + 1 end', 'n \\+ 1 end\r\n',
                      'interrupted op loop')
    check('stdin:1: interrupted' in out, 'a loop of ops was not interrupted', out)
    out = s.line('n > 0 and a:get(1, 1) == n + 1 and a:get(2, 2) == n + 1')
    check(has_value(out, 'true'), 'tensor state inconsistent after interrupting an op loop', out)

    # a compiled (JIT) loop of ops from a file: the eager interrupt flag stops it inside its trace
    spin_ops = os.path.join(HOME, 'spin_ops.lua')
    with open(spin_ops, 'w') as f:
        f.write('local b = mf.zeros(3)\nfor i = 1, 1e12 do b = b + 1 end\n')
    out = s.interrupt("dofile('%s')" % spin_ops, re.escape(spin_ops) + r"'\)\r\n", 'interrupted compiled op loop',
                      after=1.0)
    check('spin_ops.lua:2: interrupted' in out, 'a compiled loop of ops was not interrupted at its line', out)

    # compiled pure-Lua loop from a file: cannot stop in place; repeated Ctrl-C prints a note and
    # never ends the process; the loop finishes and the interrupt lands at the next interpreted line
    spin = os.path.join(HOME, 'spin.lua')
    with open(spin, 'w') as f:
        # 2 to 3 s of a loop whose compiled trace calls only C (time() through the FFI), no op
        f.write("local ffi = require 'ffi'; pcall(ffi.cdef, 'long time(void *t);')\n"
                'local stop = ffi.C.time(nil) + 3; while ffi.C.time(nil) < stop do end\n'
                'spin_done = true\n')
    s.send("dofile('%s')\r" % spin)
    s.read_until(re.escape(spin) + r"'\)\r\n")
    time.sleep(0.5)
    s.send('\x03')
    time.sleep(0.3)
    s.send('\x03')
    time.sleep(0.3)
    s.send('\x03')
    out = s.read_until(r'(?m)^mf> ', timeout=240, what='compiled loop finished')
    check('Ctrl-C does not stop in place' in out, 'no note for a Ctrl-C that cannot stop compiled code', out)
    check(out.count('Ctrl-C does not stop in place') == 1, 'the note printed more than once', out)
    check(re.search(r'spin\.lua:[23]: interrupted', out), 'the pending interrupt did not land after the compiled loop', out)
    check(s.alive(), 'repeated Ctrl-C ended the REPL')
    out = s.line('x, spin_done')
    check(has_value(out, '42\tnil'), 'state lost after repeated Ctrl-C', out)

    # help prints once
    out = s.line('help(mf.matmul)')
    check(out.count('Matrix product') == 1, 'help(mf.matmul) printed %d times' % out.count('Matrix product'), out)

    # completion: a tensor's methods after `t:`, a module's methods (not its fields) after `m:`
    s.send('t:resha\t')
    out = s.read_until('pe', what='t:resha<TAB> completes to reshape')
    s.send('\x03')
    s.read_until(r'\^C\r\n' + PROMPT)
    s.line('m = mf.nn.Linear(2, 3)')
    s.send('m:\t\t')
    # the whole list: it ends where the prompt is drawn again (its last column need not end in zero_grad)
    out = s.read_until(PROMPT + 'm:', what='method list after m:<TAB><TAB>')
    check('m:forward' in out, 'm:<TAB> does not offer forward', out)
    check('m:n_in' not in out and 'm:weight' not in out and 'm:training' not in out,
          'm:<TAB> offers data fields', out)
    s.send('\x03')
    s.read_until(r'\^C\r\n' + PROMPT)
    s.send('m.we\t')
    s.read_until('ight', what='m.we<TAB> completes the field weight')
    s.send('\x03')
    s.read_until(r'\^C\r\n' + PROMPT)

    # =expr prints, as the Lua 5.1 REPL
    out = s.line('=1+1')
    check(has_value(out, '2'), '=1+1 did not print 2', out)

    # history: appended per line, so a SIGKILL keeps it
    s.line('hist_marker = 4321')
    time.sleep(0.2)
    os.kill(s.pid, signal.SIGKILL)
    s.wait()
    hist = open(os.path.join(HOME, '.moonflow_history')).read()
    check('hist_marker = 4321\n' in hist, 'history lost after SIGKILL', hist[-500:])
    check('while true do end\n' in hist and '=1+1\n' in hist, 'history misses lines', hist[-500:])
    check('this is not lua' not in hist, 'a line cleared by Ctrl-C went to the history', hist[-500:])

    # a new session reads it back: Up recalls the last line
    s = Session()
    s.read_until(PROMPT, what='second banner')
    s.send('\x1b[A')
    s.read_until('hist_marker = 4321', what='Up recalls the last line of the killed session')
    s.send('\r')
    s.read_until(r'(?m)^mf> ')
    out = s.line('=hist_marker')
    check(has_value(out, '4321'), 'recalled history line did not run', out)
    s.send('exit()\r')
    check(s.wait() == 0, 'exit() status', str(s.status))

    s = Session()
    s.read_until(PROMPT, what='third banner')
    s.send('quit(3)\r')
    check(s.wait() == 3, 'quit(3) status', str(s.status))


if __name__ == '__main__':
    try:
        main()
    except AssertionError as e:
        FAILS.append(str(e))
        print('FAIL: %s' % e)
    finally:
        for sess in SESSIONS:
            if sess.status is None:
                try:
                    os.kill(sess.pid, signal.SIGKILL)
                    os.waitpid(sess.pid, 0)
                except OSError:
                    pass
        shutil.rmtree(HOME, ignore_errors=True)
    sys.exit(1 if FAILS else 0)
