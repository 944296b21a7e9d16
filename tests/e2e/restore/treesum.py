#!/usr/bin/env python3
"""treesum.py DIR [--skip-tmp]: one line per entry under DIR (DIR itself is "."), sorted,
with what a restore must bring back: type, mode, owner, mtime in ns, size and SHA-256
of regular files, symlink targets, user.* and trusted.* xattrs (trusted.* only as root,
who alone can read them). Two trees restore alike when their outputs are equal.
--skip-tmp leaves out lode restore's temporary files; --no-owner leaves out uid and gid."""
import hashlib
import os
import stat
import sys

root = sys.argv[1]
skip_tmp = "--skip-tmp" in sys.argv[2:]
no_owner = "--no-owner" in sys.argv[2:]


def describe(path, rel):
    st = os.lstat(path)
    kind = stat.S_IFMT(st.st_mode)
    parts = [repr(rel), oct(kind), oct(stat.S_IMODE(st.st_mode))]
    if not no_owner:
        parts += [str(st.st_uid), str(st.st_gid)]
    parts.append(str(st.st_mtime_ns))
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        parts += [str(st.st_size), h.hexdigest()]
    elif stat.S_ISLNK(st.st_mode):
        parts.append(repr(os.readlink(path)))
    if not stat.S_ISLNK(st.st_mode):
        names = sorted(n for n in os.listxattr(path) if n.startswith(("user.", "trusted.")))
        parts += [f"{n}={os.getxattr(path, n)!r}" for n in names]
    return " ".join(parts)


out = [describe(root, ".")]
for dirpath, dirnames, filenames in os.walk(root):
    dirnames.sort()
    for name in sorted(dirnames + filenames):
        if skip_tmp and name.startswith(".lode-restore-"):
            continue
        full = os.path.join(dirpath, name)
        out.append(describe(full, os.path.relpath(full, root)))
print("\n".join(sorted(out)))
