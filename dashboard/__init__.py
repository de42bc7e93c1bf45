"""nrsack.dashboard: a Dash app over the analyzer's results (`nrsack dashboard [CAPTURE_OR_DIR ...]`).

library.py   the captures (command line, uploads into the app's own temporary folder) and their
             cached analyses and findings
decimate.py  min/max per pixel bucket, so a million-event RtxQ stays fast at every zoom level
figures.py   RtxQ, ladder, compare and sweep figures, drawn from the analyzer's tables
ladder.py    the packets of a time window in the papers' notation, lost data marked
app.py       layout and callbacks (methods of Dashboard, callable without a browser)
cli.py       the command (127.0.0.1 only)
"""
