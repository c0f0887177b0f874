# webhook_receiver.py -- the alert webhook's receiver for the monitor tests: listens on a free
# 127.0.0.1 port (written to ./hook.port), appends every POST body as one line to ./hook.jsonl and
# answers 200.  Runs until killed.
import http.server


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open("hook.jsonl", "ab") as f:
            f.write(body + b"\n")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
open("hook.port", "w").write(str(server.server_address[1]))
server.serve_forever()
