"""A local stand-in for the Hugging Face Hub on 127.0.0.1: the two routes
huggingface_hub's ``model_info`` and ``hf_hub_download`` request.

* ``GET /api/models/{repo}[/revision/{revision}]``: the revision's (or
  ``main``'s) commit and file list (``sha``, ``siblings``).
* ``HEAD`` / ``GET /{repo}/resolve/{revision}/{file}``: the file, with
  ``ETag`` (its git-style SHA-1), ``X-Repo-Commit`` and
  ``Content-Length``.

A missing repository, revision or file is a 404 with the ``X-Error-Code``
the Hub sends (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``),
which huggingface_hub turns into its errors. A file in ``cut_short`` is
sent half, under its full length, every time.
"""

from __future__ import annotations

import collections
import hashlib
import http.server
import json
import threading
import urllib.parse


class HubServer:
    """Serves ``repos``: ``{repo: {revision: {file: bytes}}}``; every
    revision's commit is a hash of its name."""

    def __init__(self, repos: dict):
        self.repos = repos
        self.cut_short = set()  # (repo, file)
        self.requests = collections.Counter()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(head=True)

            def do_GET(self):
                self._answer(head=False)

            def _error(self, code: str):
                self.send_response(404)
                self.send_header("X-Error-Code", code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _answer(self, head: bool):
                path = urllib.parse.unquote(
                    urllib.parse.urlsplit(self.path).path)
                server.requests[(self.command, path)] += 1
                parts = path.strip("/").split("/")
                if parts[:2] == ["api", "models"]:
                    if "revision" in parts:  # /api/models/REPO/revision/R
                        at = parts.index("revision")
                        repo, revision = "/".join(parts[2:at]), parts[at + 1]
                    else:  # /api/models/REPO: the default branch
                        repo, revision = "/".join(parts[2:4]), "main"
                    files = server.files(repo, revision)
                    if isinstance(files, str):
                        return self._error(files)
                    body = json.dumps({
                        "id": repo, "sha": server.commit(repo, revision),
                        "siblings": [{"rfilename": n} for n in files],
                    }).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if len(parts) < 5 or parts[2] != "resolve":
                    return self._error("RepoNotFound")
                repo, revision = "/".join(parts[:2]), parts[3]
                name = "/".join(parts[4:])
                files = server.files(repo, revision)
                if isinstance(files, str):
                    return self._error(files)
                if name not in files:
                    return self._error("EntryNotFound")
                body = files[name]
                self.send_response(200)
                self.send_header("ETag", f'"{git_sha1(body)}"')
                self.send_header("X-Repo-Commit",
                                 server.commit(repo, revision))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if head:
                    return
                if (repo, name) in server.cut_short:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        daemon=True)
        self._thread.start()

    def commit(self, repo: str, revision: str) -> str:
        for name in self.repos.get(repo, {}):
            if revision in (name, self._sha(repo, name)):
                return self._sha(repo, name)
        return self._sha(repo, revision)

    @staticmethod
    def _sha(repo: str, revision: str) -> str:
        return hashlib.sha1(f"{repo}@{revision}".encode()).hexdigest()

    def files(self, repo: str, revision: str):
        """The revision's files, or the Hub's error code."""
        if repo not in self.repos:
            return "RepoNotFound"
        for name, files in self.repos[repo].items():
            if revision in (name, self._sha(repo, name)):
                return files
        return "RevisionNotFound"

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()


def git_sha1(body: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
