"""Run the `rag` CLI under a Python audit hook that blocks and records every network connection that does not
go to the loopback interface (and every DNS lookup of a name that is not localhost).

    python tests/netaudit.py REPORT.jsonl -- ingest seeds --data-dir D

Each blocked attempt is appended to REPORT.jsonl at once (so it survives the process being killed), with
the event, the address and a short stack. Native code (onnxruntime's telemetry) is not visible to audit hooks;
its switch is asserted separately.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import traceback

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def is_local(host) -> bool:
    if host is None:
        return True
    host = host.decode() if isinstance(host, bytes) else str(host)
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def outside(event: str, args: tuple) -> str | None:
    """The address of a non-loopback connection or lookup in an audit event, else None."""
    if event == "socket.connect":
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) == socket.AF_UNIX:
            return None
        host = address[0] if isinstance(address, tuple) else address
        return None if is_local(host) else repr(address)
    if event == "socket.getaddrinfo":
        return None if is_local(args[0]) else repr(args[0])
    if event == "socket.gethostbyname":
        return None if is_local(args[0]) else repr(args[0])
    return None


def install(report_path: str) -> None:
    def hook(event: str, args: tuple) -> None:
        address = outside(event, args)
        if address is None:
            return
        with open(report_path, "a") as report:
            report.write(json.dumps({"event": event, "address": address,
                                     "stack": traceback.format_stack(limit=8)}) + "\n")
        raise ConnectionRefusedError(f"netaudit: blocked {event} to {address}")

    sys.addaudithook(hook)


if __name__ == "__main__":
    report, sep, *cli_args = sys.argv[1:]
    assert sep == "--", "usage: netaudit.py REPORT -- rag-args..."
    open(report, "a").close()
    install(report)
    from rag.cli import main

    main(cli_args, prog_name="rag")
