"""A real TCP transfer over loopback captured live by `tcpdump -w -` into a command's standard input."""

import socket
import subprocess
import threading
import time


def tcpdump_into(command, send, text=False, started=None):
    """Runs `command` (argv) on tcpdump's live capture of one loopback connection while send(client
    socket) sends; -> (the command's Popen, still running or done, bytes the receiver got, the time
    send returned). started(Popen) is called as soon as the command runs (to read it live); tcpdump
    is stopped once the receiver has everything; the caller reads the command's output."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    # --immediate-mode: each packet leaves the kernel's buffer at once, not when a block fills
    tcpdump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-s", "128", "-w", "-",
                                f"tcp port {port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    consumer = subprocess.Popen(command, stdin=tcpdump.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=text)
    tcpdump.stdout.close()
    if started:
        started(consumer)
    received = []
    try:
        assert b"listening on" in tcpdump.stderr.readline()  # tcpdump is attached to the interface
        time.sleep(1.0)  # and its capture buffer is live (the line comes a little before)

        def serve():
            conn, _ = server.accept()
            while chunk := conn.recv(65536):
                received.append(len(chunk))
            conn.close()

        reader = threading.Thread(target=serve)
        reader.start()
        client = socket.create_connection(("127.0.0.1", port))
        send(client)
        sent_at = time.monotonic()
        client.close()
        reader.join(timeout=30)
        time.sleep(0.5)
    finally:
        tcpdump.terminate()
        tcpdump.wait(timeout=10)
        server.close()
    return consumer, sum(received), sent_at
