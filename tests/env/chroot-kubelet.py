#!/usr/bin/env python3
"""chroot-kubelet: a test stand-in for the kubelet and the container runtime.

It plays the kubelet of every node labelled lodestore.io/chroot-kubelet=true (KWOK is
told to leave those nodes and their pods alone): it keeps the nodes Ready, and runs
each pod bound to them as a plain process in a chroot of the image's root file system
(tests/env/build-image.sh), the way a runtime would set the process up:

- the root is an overlay of the image's files (a per-pod upper layer, so the cached
  image is never written), remounted read-only when readOnlyRootFilesystem is true;
  /proc, a small /dev (null, zero, full, random, urandom, tty) and the termination-log
  file are mounted in it;
- the pod's ServiceAccount token (TokenRequest), the CA and the
  namespace at /var/run/secrets/kubernetes.io/serviceaccount, with
  KUBERNETES_SERVICE_HOST/PORT naming the API server at 127.0.0.1 (there is no
  cluster network), unless automountServiceAccountToken is false;
- hostPath volumes are bind mounts of a per-node directory, <state>/nodes/<node>/<path>
  (type "" and DirectoryOrCreate create it), emptyDir is a per-pod directory, secret
  and downwardAPI volumes are files written from the Secret or the pod; each read-only
  where the mount says so;
- the command is the container's command and args (or the image's entrypoint and cmd)
  with $(VAR) expanded; the env is the image's, then the container's: value, valueFrom
  secretKeyRef / configMapKeyRef / fieldRef, envFrom secretRef / configMapRef, Secrets
  and ConfigMaps read through the API as the kubelet reads them;
- the user is runAsUser / runAsGroup (container over pod) or the image's USER; groups
  add supplementalGroups and fsGroup; capabilities are set as runc sets them (bounding,
  permitted, effective and inheritable = the runtime's default set with add/drop
  applied, no ambient set), so a non-root user loses them at exec as in a real
  container; allowPrivilegeEscalation false sets no_new_privs.

It reports Pending (with a waiting reason while a Secret is missing or a mount cannot
be made), Running, then Succeeded or Failed with each container's exit code, reason and
termination message (terminationMessagePath, or the log's tail with
FallbackToLogsOnError), and a pod's deadline (activeDeadlineSeconds) fails it with
reason DeadlineExceeded. A deleted pod gets SIGTERM, then SIGKILL after its grace period
(at most 30 s), then the final delete, as the kubelet does. Container output goes to
<state>/pods/<ns>_<name>_<uid>/<container>.log (there is no `kubectl logs`).

What it does not do: no PID, network, IPC, UTS or user namespace (the process sees the
host's processes and network), no cgroups (resources are ignored), no image pulls (every
pod runs the one image given, whatever its image field says), no probes, restarts or
init containers. Each pod runs in a private mount namespace, so its mounts never reach
the host and vanish with the process.

Usage: chroot-kubelet.py --server URL --ca FILE --token-file FILE --image DIR --state DIR
Needs root (mounts, chroot), util-linux (unshare, mount); Python 3 standard library only.
"""

import argparse
import base64
import ctypes
import faulthandler
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

LABEL_KEY = "lodestore.io/chroot-kubelet"
LABEL = LABEL_KEY + "=true"
GRACE_MAX = 30
CAPS = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP "
        "LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER "
        "SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE "
        "SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
        "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF "
        "CHECKPOINT_RESTORE").split()
# containerd's default capability set for a container that names none.
DEFAULT_CAPS = ("CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP "
                "NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE").split()


def log(msg):
    sys.stderr.write("%s chroot-kubelet: %s\n" % (time.strftime("%H:%M:%S", time.gmtime()), msg))
    sys.stderr.flush()


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Retry(Exception):
    """The pod cannot start yet (a missing Secret, a mount): reported as waiting, retried."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


class Api:
    """A minimal Kubernetes API client over HTTPS with a bearer token."""

    def __init__(self, server, ca, token):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca)
        self.token = token

    def conn(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, ctype="application/json"):
        c = self.conn()
        try:
            headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = ctype
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            text = r.read()
            return r.status, (json.loads(text) if text else None)
        finally:
            c.close()

    def get(self, path):
        status, obj = self.request("GET", path)
        return obj if status == 200 else None, status

    def watch(self, path, rv, on_event):
        """Streams a watch from resourceVersion rv; returns when it ends or fails."""
        sep = "&" if "?" in path else "?"
        c = self.conn(timeout=330)
        try:
            c.request("GET", "%s%swatch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=%s"
                      % (path, sep, rv), headers={"Authorization": "Bearer " + self.token})
            r = c.getresponse()
            if r.status != 200:
                return
            for line in r:
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    return
                on_event(ev["type"], ev["object"])
        finally:
            c.close()


class Container:
    """One running container: its process and where its files are."""

    def __init__(self, name, proc, logpath, termpath, policy):
        self.name, self.proc, self.logpath, self.termpath = name, proc, logpath, termpath
        self.policy = policy
        self.started = now_rfc3339()
        self.finished = None
        self.code = None


class Pod:
    def __init__(self, obj):
        self.obj = obj
        self.containers = {}  # name -> Container
        self.dir = None
        self.waiting = None  # (reason, message) last reported
        self.next_try = 0.0
        self.kill_at = None  # SIGKILL deadline after SIGTERM
        self.deadline_hit = False
        self.done = False  # terminal status reported
        self.start_time = None


class Kubelet:
    def __init__(self, api, image_dir, state):
        self.api, self.state = api, state
        self.image_dir = image_dir
        self.rootfs = os.path.join(image_dir, "rootfs")
        with open(os.path.join(image_dir, "config.json")) as f:
            self.image = json.load(f)
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.nodes = {}  # name -> node object
        self.pods = {}  # uid -> latest pod object
        self.running = {}  # uid -> Pod
        self.stopping = False

    # --- watches ----------------------------------------------------------------
    def watch_loop(self, path, table, key, keep):
        while not self.stopping:
            try:
                lst, status = self.api.get(path)
                if lst is None:
                    raise RuntimeError("list %s: HTTP %s" % (path, status))
                with self.lock:
                    table.clear()
                    for o in lst["items"]:
                        if keep(o):
                            table[key(o)] = o
                self.wake.set()

                def on_event(kind, o):
                    if kind not in ("ADDED", "MODIFIED", "DELETED"):
                        return  # BOOKMARK: only a resourceVersion
                    with self.lock:
                        if kind == "DELETED" or not keep(o):
                            table.pop(key(o), None)
                        else:
                            table[key(o)] = o
                    self.wake.set()

                self.api.watch(path, lst["metadata"]["resourceVersion"], on_event)
            except Exception as e:  # relist after any failure, as an informer does
                if not self.stopping:
                    log("watch %s: %s; listing again" % (path, e))
                    time.sleep(1)

    # --- nodes --------------------------------------------------------------------
    def node_status(self, name):
        t = now_rfc3339()
        conds = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                  "message": "chroot-kubelet (a test stand-in) runs this node's pods",
                  "lastHeartbeatTime": t, "lastTransitionTime": t}]
        for c in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            conds.append({"type": c, "status": "False", "reason": "KubeletHasNo" + c,
                          "message": "", "lastHeartbeatTime": t, "lastTransitionTime": t})
        res = {"cpu": "2", "memory": "4Gi", "pods": "110"}
        return {"status": {"conditions": conds, "capacity": res, "allocatable": res,
                           "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                         {"type": "Hostname", "address": name}],
                           "nodeInfo": {"kubeletVersion": "chroot-kubelet", "operatingSystem": "linux",
                                        "architecture": "amd64", "containerRuntimeVersion": "chroot://",
                                        "kernelVersion": os.uname().release, "osImage": "",
                                        "kubeProxyVersion": "", "machineID": "", "systemUUID": "",
                                        "bootID": ""}}}

    def node_loop(self):
        beat = {}
        while not self.stopping:
            with self.lock:
                names = list(self.nodes)
            for n in names:
                ready = [c for c in self.nodes.get(n, {}).get("status", {}).get("conditions", [])
                         if c.get("type") == "Ready" and c.get("status") == "True"]
                if ready and time.time() - beat.get(n, 0) < 20:
                    continue
                status, _ = self.api.request("PATCH", "/api/v1/nodes/%s/status" % n,
                                             self.node_status(n), "application/merge-patch+json")
                if status == 200:
                    beat[n] = time.time()
                    os.makedirs(self.node_dir(n), exist_ok=True)
            time.sleep(0.5)

    def node_dir(self, node):
        return os.path.join(self.state, "nodes", node)

    # --- pods ---------------------------------------------------------------------
    def reconcile(self):
        with self.lock:
            nodes = set(self.nodes)
            pods = {u: p for u, p in self.pods.items() if p["spec"].get("nodeName") in nodes}
        for uid, obj in pods.items():
            pod = self.running.get(uid)
            if pod is None:
                if obj.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    if obj["metadata"].get("deletionTimestamp"):
                        self.final_delete(obj)
                    continue
                pod = self.running[uid] = Pod(obj)
            pod.obj = obj
            self.step(pod)
        # Pods gone from the API (or from our nodes): kill what still runs.
        for uid in [u for u in self.running if u not in pods]:
            pod = self.running[uid]
            for c in pod.containers.values():
                if c.proc.poll() is None:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                    c.proc.wait()
            del self.running[uid]

    def step(self, pod):
        meta, spec = pod.obj["metadata"], pod.obj["spec"]
        deleting = meta.get("deletionTimestamp") is not None
        alive = [c for c in pod.containers.values() if c.proc.poll() is None]
        if deleting:
            if alive:
                self.kill(pod, alive, spec.get("terminationGracePeriodSeconds", 30))
                return
            if pod.containers and not pod.done:
                self.report_terminal(pod)
            self.final_delete(pod.obj)
            return
        if pod.done:
            return
        if not pod.containers:
            if time.time() < pod.next_try:
                return
            try:
                self.start(pod)
            except Retry as e:
                pod.next_try = time.time() + 2
                if pod.waiting != (e.reason, str(e)):
                    pod.waiting = (e.reason, str(e))
                    self.patch_status(pod, self.waiting_status(pod, e.reason, str(e)))
                return
            self.patch_status(pod, self.running_status(pod))
            return
        ads = spec.get("activeDeadlineSeconds")
        if ads is not None and alive and time.time() >= pod.start_time + ads:
            pod.deadline_hit = True
            self.kill(pod, alive, spec.get("terminationGracePeriodSeconds", 30))
            return
        if not alive:
            self.report_terminal(pod)

    def kill(self, pod, alive, grace):
        if pod.kill_at is None:
            pod.kill_at = time.time() + min(grace or 0, GRACE_MAX)
            for c in alive:
                os.killpg(c.proc.pid, signal.SIGTERM)
        elif time.time() >= pod.kill_at:
            for c in alive:
                os.killpg(c.proc.pid, signal.SIGKILL)

    def final_delete(self, obj):
        m = obj["metadata"]
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": m["uid"]}}
        self.api.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (m["namespace"], m["name"]), body)

    # --- status -------------------------------------------------------------------
    def patch_status(self, pod, status):
        m = pod.obj["metadata"]
        code, obj = self.api.request("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (m["namespace"], m["name"]),
                                     {"status": status}, "application/merge-patch+json")
        if code != 200:
            log("status of %s/%s: HTTP %s %s" % (m["namespace"], m["name"], code, obj and obj.get("message")))

    def conditions(self, ready):
        t = now_rfc3339()
        c = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": t},
             {"type": "Initialized", "status": "True", "lastTransitionTime": t}]
        for k in ("ContainersReady", "Ready"):
            c.append({"type": k, "status": "True" if ready else "False", "lastTransitionTime": t})
        return c

    def base_status(self, pod):
        return {"hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
                "startTime": pod.obj.get("status", {}).get("startTime") or now_rfc3339()}

    def waiting_status(self, pod, reason, message):
        s = self.base_status(pod)
        s.update({"phase": "Pending", "conditions": self.conditions(False),
                  "containerStatuses": [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                                         "ready": False, "restartCount": 0, "started": False,
                                         "state": {"waiting": {"reason": reason, "message": message}}}
                                        for c in pod.obj["spec"]["containers"]]})
        return s

    def running_status(self, pod):
        s = self.base_status(pod)
        s.update({"phase": "Running", "conditions": self.conditions(True),
                  "containerStatuses": [self.cstatus(pod, c) for c in pod.obj["spec"]["containers"]]})
        return s

    def cstatus(self, pod, spec):
        c = pod.containers[spec["name"]]
        st = {"name": spec["name"], "image": spec.get("image", ""), "imageID": "chroot://" + self.image_dir,
              "containerID": "chroot://%d" % c.proc.pid, "restartCount": 0}
        if c.code is None:
            st.update({"ready": True, "started": True, "state": {"running": {"startedAt": c.started}}})
            return st
        term = {"exitCode": c.code, "startedAt": c.started, "finishedAt": c.finished,
                "reason": "Completed" if c.code == 0 else "Error"}
        if c.code < 0:  # killed by a signal: the shell's convention, as runtimes report it
            term["exitCode"] = 128 - c.code
            term["signal"] = -c.code
        msg = self.termination_message(c, term["exitCode"])
        if msg:
            term["message"] = msg
        st.update({"ready": False, "started": False, "state": {"terminated": term}})
        return st

    def termination_message(self, c, code):
        msg = b""
        try:
            with open(c.termpath, "rb") as f:
                msg = f.read(4096)
        except OSError:
            pass
        if not msg and code != 0 and c.policy == "FallbackToLogsOnError":
            try:
                with open(c.logpath, "rb") as f:
                    msg = b"\n".join(f.read()[-2048:].split(b"\n")[-80:])
            except OSError:
                pass
        return msg.decode("utf-8", "replace")

    def report_terminal(self, pod):
        for c in pod.containers.values():
            if c.code is None:
                c.code = c.proc.wait()
                c.finished = now_rfc3339()
        s = self.base_status(pod)
        statuses = [self.cstatus(pod, c) for c in pod.obj["spec"]["containers"]]
        ok = all(st["state"]["terminated"]["exitCode"] == 0 for st in statuses)
        s.update({"phase": "Succeeded" if ok and not pod.deadline_hit else "Failed",
                  "conditions": self.conditions(False), "containerStatuses": statuses})
        if pod.deadline_hit:
            s.update({"reason": "DeadlineExceeded",
                      "message": "Pod was active on the node longer than the specified deadline"})
        self.patch_status(pod, s)
        pod.done = True
        m = pod.obj["metadata"]
        log("pod %s/%s ended: %s (%s)" % (m["namespace"], m["name"], s["phase"],
                                           ", ".join("%s=%s" % (st["name"], st["state"]["terminated"]["exitCode"])
                                                     for st in statuses)))

    # --- starting a pod -------------------------------------------------------------
    def lookup(self, kind, ns, name, optional):
        obj, status = self.api.get("/api/v1/namespaces/%s/%s/%s" % (ns, kind, name))
        if obj is None:
            if optional:
                return None
            raise Retry("CreateContainerConfigError", "%s %s/%s not found (HTTP %s)"
                        % (kind[:-1], ns, name, status))
        if kind == "secrets":
            return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        return {k: v.encode() for k, v in (obj.get("data") or {}).items()}

    def field(self, path):
        o = self.pod_obj
        m = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", path)
        if m:
            return o["metadata"].get(m.group(1), {}).get(m.group(2), "")
        table = {"metadata.name": o["metadata"]["name"], "metadata.namespace": o["metadata"]["namespace"],
                 "metadata.uid": o["metadata"]["uid"], "spec.nodeName": o["spec"].get("nodeName", ""),
                 "spec.serviceAccountName": o["spec"].get("serviceAccountName", ""),
                 "status.hostIP": "127.0.0.1", "status.podIP": "127.0.0.1"}
        if path not in table:
            raise Retry("CreateContainerConfigError", "fieldRef %s is not supported by chroot-kubelet" % path)
        return table[path]

    def env_of(self, ns, c):
        env = {}
        for kv in self.image.get("Env") or []:
            k, _, v = kv.partition("=")
            env[k] = v
        for src in c.get("envFrom") or []:
            ref = src.get("secretRef") or src.get("configMapRef")
            kind = "secrets" if "secretRef" in src else "configmaps"
            data = self.lookup(kind, ns, ref["name"], ref.get("optional", False)) or {}
            for k, v in data.items():
                if re.fullmatch(r"[-._a-zA-Z][-._a-zA-Z0-9]*", src.get("prefix", "") + k):
                    env[src.get("prefix", "") + k] = v.decode()
        for e in c.get("env") or []:
            if "valueFrom" not in e:
                env[e["name"]] = expand(e.get("value", ""), env)
                continue
            vf = e["valueFrom"]
            if "secretKeyRef" in vf or "configMapKeyRef" in vf:
                ref = vf.get("secretKeyRef") or vf.get("configMapKeyRef")
                kind = "secrets" if "secretKeyRef" in vf else "configmaps"
                data = self.lookup(kind, ns, ref["name"], ref.get("optional", False))
                if data is None or ref["key"] not in data:
                    if ref.get("optional"):
                        continue
                    raise Retry("CreateContainerConfigError", "couldn't find key %s in %s %s/%s"
                                % (ref["key"], kind[:-1], ns, ref["name"]))
                env[e["name"]] = data[ref["key"]].decode()
            elif "fieldRef" in vf:
                env[e["name"]] = self.field(vf["fieldRef"]["fieldPath"])
            else:
                raise Retry("CreateContainerConfigError", "env %s: only secretKeyRef, configMapKeyRef and "
                            "fieldRef are supported by chroot-kubelet" % e["name"])
        return env

    def user_of(self, spec, c):
        psc, csc = spec.get("securityContext") or {}, c.get("securityContext") or {}
        uid, gid = csc.get("runAsUser", psc.get("runAsUser")), csc.get("runAsGroup", psc.get("runAsGroup"))
        img_user, _, img_group = (self.image.get("User") or "0").partition(":")
        if uid is None:
            uid = self.passwd_id("passwd", img_user)
            if gid is None and img_group:
                gid = self.passwd_id("group", img_group)
        if gid is None:
            gid = self.primary_gid(uid)
        groups = list(psc.get("supplementalGroups") or [])
        if psc.get("fsGroup") is not None:
            groups.append(psc["fsGroup"])
        return int(uid), int(gid), groups

    def passwd_id(self, db, name):
        if name.isdigit():
            return int(name)
        with open(os.path.join(self.rootfs, "etc", db)) as f:
            for line in f:
                p = line.split(":")
                if p[0] == name:
                    return int(p[2])
        raise Retry("CreateContainerConfigError", "no %s entry %s in the image" % (db, name))

    def primary_gid(self, uid):
        try:
            with open(os.path.join(self.rootfs, "etc", "passwd")) as f:
                for line in f:
                    p = line.split(":")
                    if p[2] == str(uid):
                        return int(p[3])
        except OSError:
            pass
        return 0

    def mounts_of(self, pod, c, fs_group):
        spec, node = pod.obj["spec"], pod.obj["spec"]["nodeName"]
        vols = {v["name"]: v for v in spec.get("volumes") or []}
        out = []
        for vm in c.get("volumeMounts") or []:
            v = vols.get(vm["name"])
            if v is None:
                raise Retry("CreateContainerConfigError", "volume %s is not defined" % vm["name"])
            if "hostPath" in v:
                hp = v["hostPath"]
                src = os.path.join(self.node_dir(node), hp["path"].lstrip("/"))
                kind = hp.get("type", "")
                if kind in ("", "DirectoryOrCreate") and not os.path.lexists(src):
                    os.makedirs(src, mode=0o755, exist_ok=True)
                elif kind == "FileOrCreate" and not os.path.lexists(src):
                    open(src, "a").close()
                elif not os.path.lexists(src):
                    raise Retry("ContainerCreating", "hostPath %s (%s) does not exist in %s"
                                % (hp["path"], kind, self.node_dir(node)))
            elif "emptyDir" in v:
                src = os.path.join(pod.dir, "volumes", vm["name"])
                os.makedirs(src, exist_ok=True)
                os.chmod(src, 0o777)
            elif "secret" in v:
                sv = v["secret"]
                data = self.lookup("secrets", pod.obj["metadata"]["namespace"], sv["secretName"],
                                   sv.get("optional", False)) or {}
                src = os.path.join(pod.dir, "volumes", vm["name"])
                os.makedirs(src, exist_ok=True)
                items = sv.get("items") or [{"key": k, "path": k} for k in data]
                for it in items:
                    if it["key"] not in data:
                        raise Retry("ContainerCreating", "secret %s has no key %s" % (sv["secretName"], it["key"]))
                    p = os.path.join(src, it["path"])
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    with open(p, "wb") as f:
                        f.write(data[it["key"]])
                    os.chmod(p, it.get("mode", sv.get("defaultMode", 0o644)))
                    if fs_group is not None:
                        os.chown(p, 0, fs_group)
            elif "downwardAPI" in v:
                src = os.path.join(pod.dir, "volumes", vm["name"])
                os.makedirs(src, exist_ok=True)
                for it in v["downwardAPI"].get("items") or []:
                    if "fieldRef" not in it:
                        raise Retry("CreateContainerConfigError", "downwardAPI: only fieldRef items are "
                                    "supported by chroot-kubelet")
                    p = os.path.join(src, it["path"])
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    with open(p, "w") as f:
                        f.write(self.field(it["fieldRef"]["fieldPath"]))
                    os.chmod(p, it.get("mode", v["downwardAPI"].get("defaultMode", 0o644)))
            else:
                raise Retry("CreateContainerConfigError", "volume %s: only hostPath, emptyDir, secret and "
                            "downwardAPI are supported by chroot-kubelet" % vm["name"])
            if vm.get("subPath"):
                src = os.path.join(src, vm["subPath"])
            out.append({"source": src, "target": vm["mountPath"], "readOnly": bool(vm.get("readOnly"))})
        return out

    def caps_of(self, c):
        caps = (c.get("securityContext") or {}).get("capabilities") or {}
        drop = {x.upper().removeprefix("CAP_") for x in caps.get("drop") or []}
        add = {x.upper().removeprefix("CAP_") for x in caps.get("add") or []}
        have = set() if "ALL" in drop else set(DEFAULT_CAPS) - drop
        have |= set(CAPS) if "ALL" in add else add
        unknown = have - set(CAPS)
        if unknown:
            raise Retry("CreateContainerConfigError", "unknown capabilities %s" % sorted(unknown))
        return sorted(CAPS.index(x) for x in have)

    def start(self, pod):
        meta, spec = pod.obj["metadata"], pod.obj["spec"]
        self.pod_obj = pod.obj
        if spec.get("initContainers"):
            raise Retry("CreateContainerConfigError", "init containers are not supported by chroot-kubelet")
        pod.dir = os.path.join(self.state, "pods", "%s_%s_%s" % (meta["namespace"], meta["name"], meta["uid"]))
        plans = []
        for c in spec["containers"]:
            env = self.env_of(meta["namespace"], c)
            uid, gid, groups = self.user_of(spec, c)
            csc = c.get("securityContext") or {}
            fs_group = (spec.get("securityContext") or {}).get("fsGroup")
            argv = [expand(a, env) for a in (c.get("command") or self.image.get("Entrypoint") or [])]
            argv += [expand(a, env) for a in (c.get("args") if c.get("command") or c.get("args")
                                              else self.image.get("Cmd")) or []]
            if not argv:
                raise Retry("CreateContainerConfigError", "container %s has no command" % c["name"])
            cdir = os.path.join(pod.dir, c["name"])
            for d in ("upper", "work", "root"):
                os.makedirs(os.path.join(cdir, d), exist_ok=True)
            termpath = os.path.join(cdir, "termination-log")
            open(termpath, "w").close()
            os.chmod(termpath, 0o666)
            plans.append({
                "name": c["name"], "rootfs": self.rootfs, "dir": cdir,
                "root": os.path.join(cdir, "root"), "mounts": self.mounts_of(pod, c, fs_group),
                "readOnlyRoot": bool(csc.get("readOnlyRootFilesystem")),
                "termination": {"source": termpath,
                                "target": c.get("terminationMessagePath", "/dev/termination-log")},
                "policy": c.get("terminationMessagePolicy", "File"),
                "argv": argv, "env": env,
                "cwd": c.get("workingDir") or self.image.get("WorkingDir") or "/",
                "uid": uid, "gid": gid, "groups": groups, "caps": self.caps_of(c),
                "noNewPrivs": csc.get("allowPrivilegeEscalation") is False,
            })
        sa_mount = self.service_account(pod)
        for p in plans:
            if sa_mount:
                p["mounts"].insert(0, sa_mount)
                p["env"].setdefault("KUBERNETES_SERVICE_HOST", "127.0.0.1")
                p["env"].setdefault("KUBERNETES_SERVICE_PORT", str(self.api.port))
        pod.start_time = time.time()
        for p in plans:
            path = os.path.join(pod.dir, p["name"] + ".json")
            with open(path, "w") as f:
                json.dump(p, f)
            logpath = os.path.join(pod.dir, p["name"] + ".log")
            with open(logpath, "ab") as out:
                proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--",
                                         sys.executable, os.path.abspath(__file__), "exec", path],
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                        start_new_session=True)
            pod.containers[p["name"]] = Container(p["name"], proc, logpath, p["termination"]["source"], p["policy"])
        log("pod %s/%s started on %s: %s" % (meta["namespace"], meta["name"], spec["nodeName"],
                                            "; ".join(" ".join(p["argv"]) for p in plans)))

    def service_account(self, pod):
        """The service-account volume that admission and the kubelet give a real pod: a
        token from the TokenRequest API (not bound to the pod: with the ServiceAccount
        admission plugin off, spec.serviceAccountName may be empty, which binding
        refuses), the cluster's CA and the
        namespace, at /var/run/secrets/kubernetes.io/serviceaccount (not when
        automountServiceAccountToken is false or the ServiceAccount does not exist)."""
        meta, spec = pod.obj["metadata"], pod.obj["spec"]
        ns, name = meta["namespace"], spec.get("serviceAccountName") or "default"
        sa, _ = self.api.get("/api/v1/namespaces/%s/serviceaccounts/%s" % (ns, name))
        if sa is None or spec.get("automountServiceAccountToken", sa.get("automountServiceAccountToken", True)) is False:
            return None
        code, tr = self.api.request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, name), {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}})
        if code != 201:
            raise Retry("ContainerCreating", "token for ServiceAccount %s/%s: HTTP %s" % (ns, name, code))
        d = os.path.join(pod.dir, "serviceaccount")
        os.makedirs(d, exist_ok=True)
        with open(self.ca_file, "rb") as f:
            ca = f.read()
        for fname, data in (("token", tr["status"]["token"].encode()), ("ca.crt", ca), ("namespace", ns.encode())):
            with open(os.path.join(d, fname), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(d, fname), 0o644)
        return {"source": d, "target": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}

    # --- main -----------------------------------------------------------------------
    def run(self):
        node_keep = lambda o: o["metadata"].get("labels", {}).get(LABEL_KEY) == "true"
        threads = [
            threading.Thread(target=self.watch_loop, daemon=True,
                             args=("/api/v1/nodes?labelSelector=" + urllib.parse.quote(LABEL), self.nodes,
                                   lambda o: o["metadata"]["name"], node_keep)),
            threading.Thread(target=self.watch_loop, daemon=True,
                             args=("/api/v1/pods?fieldSelector=" + urllib.parse.quote("spec.nodeName!="),
                                   self.pods, lambda o: o["metadata"]["uid"], lambda o: True)),
            threading.Thread(target=self.node_loop, daemon=True),
        ]
        for t in threads:
            t.start()
        log("serving nodes labelled %s with the image in %s" % (LABEL, self.image_dir))
        while not self.stopping:
            self.wake.wait(0.5)
            self.wake.clear()
            try:
                self.reconcile()
            except Exception as e:  # one bad pod must not stop the others
                log("reconcile: %r" % e)
        for pod in self.running.values():
            for c in pod.containers.values():
                if c.proc.poll() is None:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                    c.proc.wait()


def expand(s, env):
    """Kubernetes' $(VAR) expansion: defined names expand, $$ is a literal $, others stay."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)", sub, s)


# --- the container side: runs in a private mount namespace, ends in execve ------------
def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def secure_join(root, path):
    """root/path with every symlink on the way resolved inside root (as runc does), so
    /var/run -> /run in the image never leads a mount out to the host's /run."""
    parts, done, links = [p for p in path.split("/") if p], "", 0
    while parts:
        p = parts.pop(0)
        if p == ".":
            continue
        if p == "..":
            done = os.path.dirname(done)
            continue
        full = os.path.join(root, done, p)
        if os.path.islink(full):
            links += 1
            if links > 40:
                raise OSError("too many symlinks in %s" % path)
            target = os.readlink(full)
            if target.startswith("/"):
                done = ""
            parts = [q for q in target.split("/") if q] + parts
            continue
        done = os.path.join(done, p)
    return os.path.join(root, done)


def ensure_target(root, target, is_dir):
    path = secure_join(root, target)
    if not os.path.lexists(path):
        if is_dir:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
    return path


def exec_container(plan_path):
    with open(plan_path) as f:
        p = json.load(f)
    root = p["root"]
    run(["mount", "-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s"
         % (p["rootfs"], os.path.join(p["dir"], "upper"), os.path.join(p["dir"], "work")), root])
    run(["mount", "-t", "proc", "proc", ensure_target(root, "/proc", True)])
    dev = ensure_target(root, "/dev", True)
    run(["mount", "-t", "tmpfs", "-o", "mode=755,nosuid", "tmpfs", dev])
    for n in ("null", "zero", "full", "random", "urandom", "tty"):
        run(["mount", "--bind", "/dev/" + n, ensure_target(root, "/dev/" + n, False)])
    for n, t in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                 ("stderr", "/proc/self/fd/2")):
        os.symlink(t, os.path.join(dev, n))
    for m in [p["termination"]] + p["mounts"]:
        target = ensure_target(root, m["target"], os.path.isdir(m["source"]))
        run(["mount", "--rbind", m["source"], target])
        if m.get("readOnly"):
            run(["mount", "-o", "remount,bind,ro", target])
    if p["readOnlyRoot"]:
        run(["mount", "-o", "remount,ro", root])

    libc = ctypes.CDLL(None, use_errno=True)

    def check(rc, what):
        if rc != 0:
            e = ctypes.get_errno()
            raise OSError(e, "%s: %s" % (what, os.strerror(e)))

    os.chroot(root)
    os.chdir(p["cwd"])
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    keep = set(p["caps"])
    for cap in range(last + 1):  # the bounding set: what an exec can ever regain
        if cap not in keep:
            check(libc.prctl(24, cap, 0, 0, 0), "PR_CAPBSET_DROP")  # PR_CAPBSET_DROP
    check(libc.prctl(8, 1, 0, 0, 0), "PR_SET_KEEPCAPS")
    os.setgroups(sorted(set(p["groups"])))
    os.setresgid(p["gid"], p["gid"], p["gid"])
    os.setresuid(p["uid"], p["uid"], p["uid"])

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    mask = sum(1 << c for c in keep)
    data = (Data * 2)()
    for i in range(2):
        word = (mask >> (32 * i)) & 0xFFFFFFFF
        data[i].effective = data[i].permitted = data[i].inheritable = word
    check(libc.capset(ctypes.byref(Header(0x20080522, 0)), data), "capset")
    if p["noNewPrivs"]:
        check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    os.execvpe(p["argv"][0], p["argv"], p["env"])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "exec":
        try:
            exec_container(sys.argv[2])
        except Exception as e:
            sys.stderr.write("chroot-kubelet: cannot start the container: %s\n" % e)
            sys.exit(128)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--image", required=True, help="a directory of tests/env/build-image.sh")
    ap.add_argument("--state", required=True, help="per-node and per-pod directories")
    a = ap.parse_args()
    with open(a.token_file) as f:
        token = f.read().strip()
    k = Kubelet(Api(a.server, a.ca, token), os.path.abspath(a.image), os.path.abspath(a.state))
    k.ca_file = a.ca

    def stop(*_):
        k.stopping = True
        k.wake.set()
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 PID: every thread's stack to the log
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    k.run()
    log("stopped")


if __name__ == "__main__":
    main()
