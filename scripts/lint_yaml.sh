#!/usr/bin/env bash
# The YAML the project ships, read by a strict reader: a mapping that repeats a key
# fails. Lenient parsers (the API server's, Helm's) take the last value without a
# word; strict ones and GitOps linters refuse the file, and a repeated key in a CRD
# usually hides an edit made to one copy only.
#
# What is read: the CRDs (crd/, which the chart's crds/ links to), the chart's plain
# files (Chart.yaml, values.yaml), the examples of docs/examples/, and the YAML the
# tests apply to a cluster (tests/env/, tests/chart/, tests/e2e/). The chart's
# templates are Go templates, not YAML: they are rendered by helm when it is found
# (on PATH, or where tests/chart/build-tool.sh puts it), with the defaults and with
# every optional object switched on, and the output is read; without helm they are
# skipped with a note. Policy fixtures and fuzz seeds are left out on purpose: some
# repeat keys to test lode's own reader.
#
# The reader is PyYAML's SafeLoader with a mapping constructor that refuses a key
# it has already seen (Debian's python3-yaml, installed by make setup).
set -u
cd "$(dirname "$0")/.."

if ! python3 -c 'import yaml' 2>/dev/null; then
    echo "lint: python3-yaml is missing (make setup)"
    exit 1
fi

# The reader, as a program text, so that its standard input stays free for "-".
IFS= read -r -d '' reader <<'EOF'
import os
import sys
import yaml


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that notes every key a mapping has already seen."""

    def __init__(self, stream):
        super().__init__(stream)
        self.repeats = []


def construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            continue  # a sequence or mapping as a key: not what this check is about
        mark = key_node.start_mark
        if key in seen:
            loader.repeats.append("%d:%d: the key %r appears twice in one mapping (first at line %d)"
                                  % (mark.line + 1, mark.column + 1, key, seen[key]))
        else:
            seen[key] = mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)

status = 0
for name in sys.argv[1:]:
    label = os.environ.get("LABEL", "<stdin>") if name == "-" else name
    try:
        if name == "-":
            text = sys.stdin.read()
        else:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        loader = StrictLoader(text)
        try:
            while loader.check_data():
                loader.get_data()
        finally:
            loader.dispose()
        for r in loader.repeats:
            print("lint: %s:%s" % (label, r))
            status = 1
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark
        print("lint: %s:%d:%d: %s" % (label, m.line + 1, m.column + 1, e.problem))
        status = 1
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as e:
        print("lint: %s: %s" % (label, e))
        status = 1
sys.exit(status)
EOF

strict_read() { # FILE... ; a name of "-" reads standard input, named by $LABEL
    python3 -c "$reader" "$@"
}

status=0
plain=$(git ls-files --cached --others --exclude-standard \
    'crd/*.yaml' 'charts/*.yaml' 'docs/examples/*.yaml' 'docs/examples/*.yml' \
    'tests/env/*.yaml' 'tests/chart/*.yaml' 'tests/e2e/*.yaml' | grep -v '^charts/.*/templates/')
# shellcheck disable=SC2086
strict_read $plain || status=1

helm_bin=$(command -v helm 2>/dev/null || ls "$HOME"/.cache/lodestore/bin/helm-*/helm 2>/dev/null | tail -n 1)
for chart in charts/*/; do
    [ -d "$chart/templates" ] || continue
    if [ -z "$helm_bin" ]; then
        echo "lint: note: helm not found; the templates of $chart were not rendered and read"
        continue
    fi
    # The defaults, then every optional object on and the other RBAC branch.
    for opts in "" "--set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true --set watchNamespace=lint"; do
        label="helm template ${chart%/} ${opts:-(the defaults)}"
        # shellcheck disable=SC2086
        # Only the rendering is read: helm's notes (a linked crds/ directory) go to stderr,
        # which is shown only when the rendering fails.
        errf=$(mktemp)
        out=$("$helm_bin" template lint "$chart" $opts 2>"$errf") || {
            echo "lint: $label failed: $(cat "$errf")"
            rm -f "$errf"
            status=1
            continue
        }
        rm -f "$errf"
        LABEL="$label, rendered" strict_read - <<<"$out" || status=1
    done
done
exit $status
