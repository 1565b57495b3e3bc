"""A real SPARQL 1.1 server (Oxigraph, from PyPI) on 127.0.0.1, loaded with a dump converted to RDF."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cultureboard.builder.kb_rdf import dump_to_ntriples


def _oxigraph() -> str:
    exe = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")
    if not Path(exe).exists():
        raise RuntimeError("the oxigraph server is not installed: pip install oxigraph (it is in the test extras)")
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OxigraphServer:
    """``with OxigraphServer(dump, workdir) as url:`` serves the dump's RDF at ``url`` (the /query endpoint)."""

    def __init__(self, dump: Path, workdir: Path):
        self.dump, self.workdir = Path(dump), Path(workdir)

    def __enter__(self) -> str:
        nt = self.workdir / "kb.nt"
        dump_to_ntriples(self.dump, nt)
        store = self.workdir / "store"
        subprocess.run([_oxigraph(), "load", "--location", str(store), "--file", str(nt)], check=True, capture_output=True)
        port = _free_port()
        self.proc = subprocess.Popen([_oxigraph(), "serve-read-only", "--location", str(store), "--bind", f"127.0.0.1:{port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/query"
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=1).close()
                return url
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError("oxigraph did not start")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
