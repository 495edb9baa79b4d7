"""Drives a Jupyter kernel as a notebook front end does, for tests/interrupt_test.ts.

Started as `python3 tests/kernel_driver.py KERNEL_NAME LOG`, it starts the kernel
through jupyter_client (the kernelspec Jupyter finds for KERNEL_NAME, as
JupyterLab and nbclient do; the kernel's own output goes to the file LOG), then
reads one JSON command per line on stdin and
answers each with one JSON line on stdout:

- {"op": "execute", "code": "..."}: sends an execute_request; answers {"id": ...}.
- {"op": "wait", "id": ..., "timeout": s, "until": "idle" | REGEX}: reads the
  kernel's messages until the cell reports idle (or, with a regular expression,
  until its text output matches it), or the time-out; answers what the cell
  produced so far: {"idle", "matched", "text", "error", "reply", "seconds"}.
  `text` joins its stream output, the text/plain of its displays (updates of a
  display replace it, as a front end redraws it) and of its result.
- {"op": "interrupt"}: what the Stop button sends (km.interrupt_kernel(): a
  signal or an interrupt_request, as the kernelspec's interrupt_mode says).
- {"op": "alive"}: whether the kernel process is alive.
- {"op": "shutdown"}: stops the kernel and exits.
"""
import json
import re
import sys
import time

from jupyter_client import KernelManager


class Cell:
    def __init__(self):
        self.streams = []
        self.displays = {}  # display_id (or a fresh key) -> text/plain, in order
        self.result = ""
        self.error = None
        self.reply = None
        self.idle = False

    def text(self):
        return "".join(self.streams) + "\n".join(self.displays.values()) + self.result


def main():
    km = KernelManager(kernel_name=sys.argv[1])
    log = open(sys.argv[2], "w")
    km.start_kernel(stdout=log, stderr=log)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    cells = {}

    def pump(timeout):
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except Exception:
            msg = None
        if msg:
            cell = cells.get(msg["parent_header"].get("msg_id"))
            kind, content = msg["msg_type"], msg["content"]
            if cell is not None:
                if kind == "stream":
                    cell.streams.append(content.get("text", ""))
                elif kind in ("display_data", "update_display_data"):
                    key = content.get("transient", {}).get("display_id") or f"#{len(cell.displays)}"
                    cell.displays[key] = content.get("data", {}).get("text/plain", "")
                elif kind == "execute_result":
                    cell.result = content.get("data", {}).get("text/plain", "")
                elif kind == "error":
                    cell.error = {"ename": content.get("ename"), "evalue": content.get("evalue")}
                elif kind == "status" and content.get("execution_state") == "idle":
                    cell.idle = True
            elif kind == "update_display_data":
                # An update sent after its cell ended still redraws that cell's display.
                key = content.get("transient", {}).get("display_id")
                for c in cells.values():
                    if key in c.displays:
                        c.displays[key] = content.get("data", {}).get("text/plain", "")
        while True:
            try:
                reply = kc.get_shell_msg(timeout=0)
            except Exception:
                break
            cell = cells.get(reply["parent_header"].get("msg_id"))
            if cell is not None and reply["msg_type"] == "execute_reply":
                c = reply["content"]
                cell.reply = {"status": c.get("status"), "ename": c.get("ename"), "evalue": c.get("evalue")}

    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "execute":
            msg_id = kc.execute(cmd["code"])
            cells[msg_id] = Cell()
            out = {"id": msg_id}
        elif op == "wait":
            cell, t0 = cells[cmd["id"]], time.time()
            until = cmd.get("until", "idle")
            pattern = None if until == "idle" else re.compile(until)
            matched = False
            while time.time() - t0 < cmd.get("timeout", 60):
                pump(0.05)
                if pattern is not None and pattern.search(cell.text()):
                    matched = True
                    break
                if pattern is None and cell.idle:
                    # The reply may trail the idle status by a moment, and so may the last redraw of a display
                    # (the Deno kernel can report a cell idle before a display it queued is sent).
                    end, grace = time.time() + 2, time.time() + 0.5
                    while (cell.reply is None and time.time() < end) or time.time() < grace:
                        pump(0.05)
                    break
            out = {
                "idle": cell.idle,
                "matched": matched,
                "text": cell.text(),
                "error": cell.error,
                "reply": cell.reply,
                "seconds": time.time() - t0,
            }
        elif op == "interrupt":
            km.interrupt_kernel()
            out = {"ok": True}
        elif op == "alive":
            out = {"alive": km.is_alive()}
        elif op == "shutdown":
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            print(json.dumps({"ok": True}), flush=True)
            return
        else:
            out = {"unknown": op}
        print(json.dumps(out), flush=True)
    kc.stop_channels()
    km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
