"""A webhook receiver for tests/e2e/webhooks.rs: verifies every delivery with
the `standardwebhooks` package (not askgate's code) and reports each as a
JSON line on stdout.

    receiver.py PORT SECRET FAIL_FIRST

PORT 0 picks a free port; the first line is {"port": N}. The first
FAIL_FIRST verified deliveries are answered 500, the rest 204; a delivery
the library refuses is answered 400. For each verified delivery the line
also says whether the library refuses the same delivery with one byte of
its body changed (forged), signed with another secret (forged), and
replayed ten minutes later (past the specification's five-minute
tolerance).
"""

import base64
import datetime as dt
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from unittest import mock

import standardwebhooks.webhooks as webhooks
from standardwebhooks import Webhook, WebhookVerificationError

PORT, SECRET, FAIL_FIRST = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
HOOK = Webhook(SECRET)
OTHER = Webhook("whsec_" + base64.b64encode(b"another secret, 32 bytes long!!!").decode())
failures_left = FAIL_FIRST


def refused(hook, body, headers):
    try:
        hook.verify(body, headers)
    except WebhookVerificationError:
        return True
    return False


class Later(dt.datetime):
    """The clock ten minutes on: a replay of a delivery received now."""

    @classmethod
    def now(cls, tz=None):
        return dt.datetime.now(tz) + dt.timedelta(minutes=10)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        global failures_left
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {name.lower(): value for name, value in self.headers.items()}
        report = {"webhookId": headers.get("webhook-id")}
        try:
            payload = HOOK.verify(body, headers)
        except WebhookVerificationError as error:
            report.update(verified=False, error=str(error), answered=400)
            self.answer(400, report)
            return
        forged_body = body[:-1] + (b" " if body[-1:] != b" " else b"\n")
        with mock.patch.object(webhooks, "datetime", Later):
            replay_refused = refused(HOOK, body, headers)
        report.update(
            verified=True,
            payload=payload,
            forgedBodyRefused=refused(HOOK, forged_body, headers),
            otherSecretRefused=refused(OTHER, body, headers),
            replayRefused=replay_refused,
        )
        if failures_left > 0:
            failures_left -= 1
            report["answered"] = 500
            self.answer(500, report)
        else:
            report["answered"] = 204
            self.answer(204, report)

    def answer(self, status, report):
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()
        print(json.dumps(report), flush=True)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", PORT), Handler)
print(json.dumps({"port": server.server_address[1]}), flush=True)
server.serve_forever()
