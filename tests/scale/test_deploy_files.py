"""deploy/: the files of the many-servers recipe are well-formed (they cannot
be run here: no Docker daemon, no Kubernetes cluster).  The Kubernetes
manifests parse as YAML (python3-yaml) and hold what docs/scale-out.md
promises (probes on /v2/health/ready and /v2/health/live, the ConfigMap
mounted where the image reads its config, the Service selecting the pods);
the Dockerfile uses only known instructions, and its ENTRYPOINT, config path
and probe match the other files; the config file's keys are `infera serve`
keys (the CLI's own --config parser checks them: `serve --help` lists them).
The nginx template is rendered and checked by `nginx -t` in test_replicas.sh.
usage: test_deploy_files.py SOURCE_DIR INFERA"""
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIP python3-yaml missing")
    sys.exit(77)

SRC, INFERA = sys.argv[1], sys.argv[2]
DEPLOY = os.path.join(SRC, "deploy")
failures = []


def check(what, ok):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


docs = {}
for name in ("configmap.yaml", "deployment.yaml", "service.yaml"):
    with open(os.path.join(DEPLOY, "k8s", name), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    check("%s parses with apiVersion and kind" % name, isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc)
    docs[doc["kind"]] = doc
dep, svc, cm = docs["Deployment"], docs["Service"], docs["ConfigMap"]
pod = dep["spec"]["template"]
container = pod["spec"]["containers"][0]
check("the Deployment's selector matches its pod labels",
      dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items())
check("the Service selects the Deployment's pods", svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items())
check("readiness probe is /v2/health/ready", container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready")
check("liveness probe is /v2/health/live", container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live")
mount = [m for m in container["volumeMounts"] if m["name"] == "config"][0]
check("the ConfigMap is mounted at /etc/infera", mount["mountPath"] == "/etc/infera" and
      [v for v in pod["spec"]["volumes"] if v["name"] == "config"][0]["configMap"]["name"] == cm["metadata"]["name"])
check("the ConfigMap holds serve.conf", "serve.conf" in cm["data"])
grace = pod["spec"]["terminationGracePeriodSeconds"]
drain = int(re.search(r"drain-timeout-s\s*=\s*(\d+)", cm["data"]["serve.conf"]).group(1))
check("the drain timeout fits in the grace period", drain + 5 < grace)

KNOWN = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR",
         "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
with open(os.path.join(DEPLOY, "Dockerfile"), encoding="utf-8") as f:
    text = re.sub(r"\\\n", " ", f.read())
instructions = [line.split()[0].upper() for line in text.splitlines() if line.strip() and not line.startswith("#")]
check("the Dockerfile uses only Dockerfile instructions", set(instructions) <= KNOWN and instructions[0] == "FROM")
check("the image runs serve with /etc/infera/serve.conf", '"serve", "--config", "/etc/infera/serve.conf"' in text)
check("the image's health check is the readiness probe", "/v2/health/ready" in text)
check("the image installs only Debian packages (apt-get)", "pip install" not in text and "npm install" not in text)

# every key of both serve configs is a key `infera serve` knows (docs/serving.md "Configuration")
help_text = subprocess.run([INFERA, "serve", "--help"], capture_output=True, text=True).stdout + \
    subprocess.run([INFERA, "serve", "--help"], capture_output=True, text=True).stderr
for conf_name, conf in (("deploy/serve.conf", open(os.path.join(DEPLOY, "serve.conf")).read()),
                        ("the ConfigMap's serve.conf", cm["data"]["serve.conf"])):
    keys = [line.split("=")[0].strip() for line in conf.splitlines() if "=" in line and not line.startswith("#")]
    unknown = [k for k in keys if "--" + k not in help_text]
    check("%s has only serve keys %s" % (conf_name, unknown or ""), not unknown)
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
