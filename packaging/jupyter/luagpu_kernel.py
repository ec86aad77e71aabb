"""luagpu's Jupyter kernel: a wrapper kernel (ipykernel) that runs the luagpu
program as `luagpu -e "require('luagpu.notebook').serve()"` and drives it
over pipes (lua/luagpu/notebook.lua has the protocol): a cell goes down a
pipe of its own (stdin is /dev/null); what it prints comes back on its stdout and stderr, streamed as it
comes; values and pictures come back on a pipe of their own as MIME bundles
(text/plain, text/html tables, image/png, image/svg+xml).

The program is $LUAGPU_KERNEL_PROGRAM (kernel.json sets it to the installed
one), else `luagpu` on PATH. An interrupt is passed on to the program, whose
running cell raises "interrupted!"; a second one while the first waits ends
it. If the program ends, the next cell starts a new one (its globals are
gone, and the cell's output says so).
"""

import base64
import os
import selectors
import signal
import subprocess
import sys

from ipykernel.kernelbase import Kernel

SERVE = "require('luagpu.notebook').serve()"


class LuagpuKernel(Kernel):
    implementation = "luagpu"
    implementation_version = "0.1"
    language = "lua"
    language_version = "5.4"
    language_info = {
        "name": "lua",
        "mimetype": "text/x-lua",
        "file_extension": ".lua",
        "codemirror_mode": "lua",
        "pygments_lexer": "lua",
    }
    banner = "luagpu: GPU computing from Lua 5.4 over OpenCL"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.proc = None
        self.reply = None

    # ------------------------------------------------------------ the program

    def _start(self):
        program = os.environ.get("LUAGPU_KERNEL_PROGRAM") or "luagpu"
        r, w = os.pipe()           # answers: luagpu writes w
        cr, cw = os.pipe()         # cells: luagpu reads cr
        env = dict(os.environ)
        env["LUAGPU_NOTEBOOK_FD"] = str(w)
        env["LUAGPU_NOTEBOOK_IN"] = str(cr)
        self.proc = subprocess.Popen(
            [program, "-e", SERVE],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(w, cr), env=env,
            # its own session: an interrupt reaches it once, from here,
            # not also from Jupyter's signal to the kernel's process group
            start_new_session=True,
        )
        os.close(w)
        os.close(cr)
        self.reply = os.fdopen(r, "rb", buffering=0)
        self.cells = os.fdopen(cw, "wb")
        self.buf = {"out": b"", "err": b"", "reply": b""}

    def _stop(self):
        if self.proc is not None:
            try:
                self.cells.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            for f in (self.proc.stdout, self.proc.stderr, self.reply):
                f.close()
        self.proc = None

    # ------------------------------------------------------------- messages

    def _stream(self, name, data):
        if data and not self.silent:
            self.send_response(self.iopub_socket, "stream",
                               {"name": name, "text": data.decode("utf-8", "replace")})

    def _display(self, items, kind="display"):
        data = {}
        for mime, payload in items:
            if mime == "image/png":
                data[mime] = base64.b64encode(payload).decode("ascii")
            else:
                data[mime] = payload.decode("utf-8", "replace")
        if self.silent:
            return
        if kind == "result":
            self.send_response(self.iopub_socket, "execute_result",
                               {"data": data, "metadata": {},
                                "execution_count": self.execution_count})
        else:
            self.send_response(self.iopub_socket, "display_data",
                               {"data": data, "metadata": {}})

    def _parse_replies(self):
        """Handles the complete answers in the reply buffer; returns
        (done, error message or None)."""
        buf, error = self.buf["reply"], None
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            head = buf[:nl].split(b" ")
            if head[0] == b"done":
                self.buf["reply"] = buf[nl + 1:]
                return True, self.error
            if head[0] == b"error":
                n = int(head[1])
                if len(buf) < nl + 1 + n:
                    break
                self.error = buf[nl + 1:nl + 1 + n].decode("utf-8", "replace")
                buf = buf[nl + 1 + n:]
            elif head[0] in (b"display", b"result"):
                count, pos, items = int(head[1]), nl + 1, []
                for _ in range(count):
                    inl = buf.find(b"\n", pos)
                    if inl < 0:
                        break
                    mime, n = buf[pos:inl].decode().rsplit(" ", 1)
                    n = int(n)
                    if len(buf) < inl + 1 + n:
                        break
                    items.append((mime, buf[inl + 1:inl + 1 + n]))
                    pos = inl + 1 + n
                if len(items) < count:
                    break
                self._display(items, head[0].decode())
                buf = buf[pos:]
            else:
                raise RuntimeError("luagpu kernel: unexpected answer %r" % buf[:80])
        self.buf["reply"] = buf
        return False, error

    def _run(self, code):
        """Sends one cell and handles what comes back until it is done;
        returns the error message or None."""
        data = code.encode("utf-8")
        self.cells.write(b"%d\n" % len(data) + data)
        self.cells.flush()
        self.error = None
        sel = selectors.DefaultSelector()
        # the output pipes first: luagpu flushes them before it answers
        sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
        sel.register(self.reply, selectors.EVENT_READ, "reply")
        open_ = 3
        try:
            while open_:
                ready = sel.select()
                ready.sort(key=lambda kv: kv[0].data == "reply")
                for key, _ in ready:
                    chunk = os.read(key.fileobj.fileno(), 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        open_ -= 1
                        continue
                    if key.data == "reply":
                        self.buf["reply"] += chunk
                        done, error = self._parse_replies()
                        if done:
                            self._drain()
                            return error
                    else:
                        self._stream("stdout" if key.data == "out" else "stderr", chunk)
        finally:
            sel.close()
        # every pipe closed before "done": the program ended
        code = self.proc.wait()
        self._stop()
        return ("luagpu ended (exit status %d) during this cell; the next cell starts "
                "a new one (globals are gone)" % code)

    def _drain(self):
        for name, f in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            os.set_blocking(f.fileno(), False)
            try:
                while True:
                    chunk = os.read(f.fileno(), 65536)
                    if not chunk:
                        break
                    self._stream(name, chunk)
            except BlockingIOError:
                pass
            finally:
                os.set_blocking(f.fileno(), True)

    # ------------------------------------------------------------- requests

    def do_execute(self, code, silent, store_history=True, user_expressions=None,
                   allow_stdin=False):
        self.silent = silent
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self._stop()
            try:
                self._start()
            except OSError as e:
                return self._error("luagpu: notebook: cannot start %s: %s" % (
                    os.environ.get("LUAGPU_KERNEL_PROGRAM") or "luagpu", e))
        try:
            error = self._run(code)
        except KeyboardInterrupt:
            # forward the interrupt, then wait for the cell to end
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    error = self._finish()
                except KeyboardInterrupt:
                    self.proc.kill()
                    error = "interrupted twice: luagpu was stopped (globals are gone)"
            else:
                error = "interrupted"
        except (BrokenPipeError, OSError) as e:
            self._stop()
            error = "luagpu: notebook: the program's pipe broke (%s); the next cell " \
                    "starts a new one" % e
        if error is not None:
            return self._error(error)
        return {"status": "ok", "execution_count": self.execution_count,
                "payload": [], "user_expressions": {}}

    def _finish(self):
        """After an interrupt: waits for the cell's answers to end."""
        sel = selectors.DefaultSelector()
        sel.register(self.reply, selectors.EVENT_READ)
        try:
            while True:
                sel.select(timeout=10)
                chunk = os.read(self.reply.fileno(), 65536)
                if not chunk:
                    self._stop()
                    return "interrupted: luagpu ended; the next cell starts a new one"
                self.buf["reply"] += chunk
                done, error = self._parse_replies()
                if done:
                    self._drain()
                    return error or "interrupted"
        finally:
            sel.close()

    def _error(self, message):
        first = message.split("\n", 1)[0]
        if not self.silent:
            self.send_response(self.iopub_socket, "error", {
                "ename": "LuaError", "evalue": first, "traceback": message.split("\n")})
        return {"status": "error", "execution_count": self.execution_count,
                "ename": "LuaError", "evalue": first, "traceback": message.split("\n")}

    def do_shutdown(self, restart):
        self._stop()
        return {"status": "ok", "restart": restart}


if __name__ == "__main__":
    from ipykernel.kernelapp import IPKernelApp
    IPKernelApp.launch_instance(kernel_class=LuagpuKernel)
