"""Download one URL to a file, completely or not at all.

It uses the standard library only, with no TensorFlow and no requests.

Why not ``keras.utils.get_file``, which comes with Keras? Its source
(keras 3, ``keras/src/utils/file_utils.py``) shows:

* importing ``keras.utils`` imports TensorFlow, about 5 s here. The
  ``bilm-keras`` command resolves models before it imports TensorFlow.
* it downloads straight to the final cache path. A killed process leaves a
  partial file there that the next call takes for a cached one. It checks
  a hash only if the caller knows one, and no publisher of these models
  gives one.
* two processes download onto the same path at once, with nothing to keep
  them apart.
* a failed download raises a bare ``Exception``, which the command would
  show as a traceback rather than one line.
* its archive extraction skips unsafe members with a warning and goes on,
  where :mod:`.archives` refuses the archive.
* its progress bar writes to stdout whether or not that is a terminal.

Two things it does well are kept. One is ``urllib``'s byte count against
``Content-Length``: ``urlretrieve`` raises ``ContentTooShortError``, and
here :func:`download_file` counts the bytes itself. The other is the URL
rewritten by the caller (``--mirror``). So this module is ~150 lines of
``urllib``. A temporary ``.part`` file is renamed in only when the byte
count matches ``Content-Length`` and, given the cache, its sha256 matches
the URL's first download (:func:`~.model_cache.check_download`). A
redirect from https to plain http is refused. Every failure is a one-line
error, and the progress bar shows on a terminal only.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import time
import urllib.error
import urllib.request
from typing import TextIO

from bilm_keras._utils.durations import format_duration
from bilm_keras._utils.version import __version__
from bilm_keras.pretrained.errors import PretrainedModelError
from bilm_keras.pretrained.model_cache import check_download

#: seconds a connection attempt or a read may stall before giving up
TIMEOUT = 60.0
CHUNK = 1 << 20


def _megabytes(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


class ByteProgress:
    """A one-line download progress bar, redrawn in place (a terminal).

    Args:
        label: what is downloaded (a model name or a file name).
        total: the expected bytes, or None (no ``Content-Length``).
        file: where to draw (default ``sys.stderr``).
    """

    def __init__(self, label: str, total: int | None,
                 file: TextIO | None = None):
        self.label = label
        self.total = total
        self.file = sys.stderr if file is None else file
        self.start = time.monotonic()
        self._drawn_at = 0.0

    def update(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._drawn_at < 0.2:
            return
        self._drawn_at = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        if self.total:
            percent = 100 * done / self.total
            text = (f"{self.label}: {_megabytes(done)} of "
                    f"{_megabytes(self.total)} ({percent:3.0f}%)")
            if rate and not final:
                text += (" ETA "
                         f"{format_duration((self.total - done) / rate)}")
        else:
            text = f"{self.label}: {_megabytes(done)}"
        text += f" {_megabytes(rate)}/s"
        self.file.write("\r" + text.ljust(79) + ("\n" if final else ""))
        self.file.flush()


class _NoDowngrade(urllib.request.HTTPRedirectHandler):
    """Follows redirects, but not from https to plain http: what TLS
    protected would then come unprotected."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if (req.full_url.lower().startswith("https://")
                and newurl.lower().startswith("http://")):
            raise PretrainedModelError(
                f"{req.full_url}: download refused: the server redirects "
                f"to plain http ({newurl})")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_NoDowngrade)


def download_file(url: str, path: str, *, label: str | None = None,
                  progress: bool | None = None,
                  timeout: float = TIMEOUT,
                  cache_dir: str | None = None) -> int:
    """Downloads ``url`` to ``path``.

    The body goes to ``path + ".part"``, which is renamed to ``path`` only
    when complete. Complete is as many bytes as ``Content-Length`` says,
    where the server sends one. On any failure nothing is left at either
    path.

    Args:
        url: an http(s) URL.
        path: the file to write. Its folder exists.
        label: what the progress bar and the errors call it. The default
            is the URL.
        progress: draw a progress bar on stderr. None draws it only if
            stderr is a terminal.
        timeout: seconds a connection or a read may stall.
        cache_dir: the model cache, whose record of ``url``'s first
            download the bytes must match (the first download is
            recorded). None checks nothing.

    Returns:
        The bytes written.

    Raises:
        PretrainedModelError: an HTTP error status, a connection that fails
            or stalls, a body cut short of its ``Content-Length``, a
            redirect from https to http, or bytes other than the URL's
            first download, in one line naming the URL.
    """
    label = label or url
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        progress = bool(isatty and isatty())
    part = path + ".part"
    request = urllib.request.Request(
        url, headers={"User-Agent": f"bilm_keras/{__version__}"})
    done = 0
    digest = hashlib.sha256()
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            expected = int(length) if length and length.isdigit() else None
            bar = ByteProgress(label, expected) if progress else None
            with open(part, "wb") as out:
                while True:
                    chunk = response.read(CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    digest.update(chunk)
                    done += len(chunk)
                    if bar is not None:
                        bar.update(done)
                out.flush()
                os.fsync(out.fileno())
            if bar is not None:
                bar.update(done, final=True)
        if expected is not None and done != expected:
            raise PretrainedModelError(
                f"{url}: download cut short: expected {expected:,} bytes "
                f"(Content-Length), received {done:,}; nothing was cached, "
                "try again")
        if cache_dir is not None:
            check_download(cache_dir, url, digest.hexdigest(), done)
        os.replace(part, path)
        return done
    except urllib.error.HTTPError as e:
        raise PretrainedModelError(
            f"{url}: download failed: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        reason = getattr(e.reason, "strerror", None) or e.reason
        raise PretrainedModelError(
            f"{url}: download failed: cannot connect ({reason})") from None
    except http.client.IncompleteRead as e:
        raise PretrainedModelError(
            f"{url}: download cut short: received {done + len(e.partial):,}"
            " bytes, the server closed the connection; nothing was cached, "
            "try again") from None
    except TimeoutError:
        raise PretrainedModelError(
            f"{url}: download failed: no data for {timeout:g} s; nothing "
            "was cached, try again") from None
    except (http.client.HTTPException, ConnectionError) as e:
        raise PretrainedModelError(
            f"{url}: download failed after {done:,} bytes "
            f"({type(e).__name__}: {e}); nothing was cached, try again"
        ) from None
    finally:
        if os.path.exists(part):
            os.remove(part)
