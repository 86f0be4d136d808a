#!/usr/bin/env python3
"""Renders the krew manifest template (krew-manifest.yaml, in krew-release-bot's convention) for TAG
from the archives in DIST:
    scripts/render-manifest.py TEMPLATE OUT DIST TAG
{{ .TagName }} becomes TAG; each {{addURIAndSha "URL" .TagName}} becomes `uri: URL` and
`sha256: ...` of DIST/<the URL's file name>. A platform whose archive is not in DIST is left
out (a local run builds only its own), and no archive at all is an error."""
import hashlib
import os
import re
import sys

template, out, dist, tag = sys.argv[1:]
text = open(template).read().replace("{{ .TagName }}", tag)
head, _, body = text.partition("  platforms:\n")
head = "".join(l for l in head.splitlines(True) if not l.startswith("#"))
kept = []
for block in re.split(r"(?m)^(?=  - selector:)", body):
    m = re.search(r'(?m)^( *)\{\{ *addURIAndSha "([^"]+)" \.TagName *\}\}$', block)
    if not m:
        continue
    indent, uri = m.groups()
    path = os.path.join(dist, uri.rsplit("/", 1)[1])
    if not os.path.exists(path):
        continue
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    kept.append(block.replace(m.group(0), f"{indent}uri: {uri}\n{indent}sha256: {digest}"))
if not kept:
    sys.exit(f"no archive for any platform of {template} in {dist}")
open(out, "w").write(head + "  platforms:\n" + "".join(kept))
