#!/usr/bin/env python3
"""Checks the deployment files (Dockerfile, deploy/) without a container engine.

    check_deploy_files.py --source DIR --binary PATH CHECK

CHECK is one of the names in CHECKS below (tests/deploy/CMakeLists.txt registers
each as the CTest test deploy_<CHECK>). Each check prints what it found wrong and
exits 1, or exits 0. What a check reads:

  yaml        every YAML and JSON file under deploy/ parses
  configs     every oncecount configuration (image, compose, ConfigMap) passes
              `oncecount check-config`, alone and with the environment overrides the
              compose file and the StatefulSet set; every ONCECOUNT_* variable names
              a real key; the deployed ones talk to a real Kafka and keep standbys
  topics      deploy/create-topics.sh, run against a stand-in for kafka-topics.sh,
              creates the four topics the service needs with the right partition
              counts and settings, and refuses a changelog with the wrong count; the
              compose service and the Kubernetes Job create the topics their
              instances' configurations name
  compose     deploy/docker-compose.yml: `docker-compose config` (Debian's Compose,
              which parses without an engine) accepts it; KRaft Kafka with its log
              directory on a volume, the topics service, two or more instances with
              distinct ids, files and ports that line up; images tagged with the
              project's version
  kubernetes  deploy/kubernetes/: StatefulSet, Services, ConfigMaps, PDB, Job and how
              they refer to each other; a startup probe, then probes on /healthz and
              /readyz; every pod within Pod Security "restricted"; the image tagged
              with the project's version
  dashboard   the Grafana JSON parses and every metric it queries is one the service
              exposes (read from a running `oncecount serve`)
  prometheus  the scrape config and the alert rules query exposed metrics only
  dockerfile  the Dockerfile runs scripts/setup and scripts/build as CI does, installs
              no other build packages, and its runtime stage covers the shared
              libraries of the built binary
  docs        docs/operations.md describes every exposed metric; the README links it
  promtool    `promtool check metrics` accepts what GET /metrics serves
  selftest    every check above, fed a broken copy of its input, reports it
"""

import argparse
import copy
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

try:
    import yaml
except ImportError:
    print("python3-yaml is missing: run scripts/setup (it installs python3-yaml)")
    sys.exit(1)

ARGS = None
CONFIG_PATH = "/etc/oncecount/oncecount.yaml"


def src(*parts):
    return os.path.join(ARGS.source, *parts)


def read(*parts):
    with open(src(*parts), encoding="utf-8") as f:
        return f.read()


def load_all(*parts):
    return [d for d in yaml.safe_load_all(read(*parts)) if d is not None]


# --- The service itself --------------------------------------------------------------

def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONCECOUNT_")}
    env.update(extra or {})
    return env


def check_config(text, env=None):
    """Runs `oncecount check-config` on a config text: (effective config or None, message)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([ARGS.binary, "check-config", path], env=clean_env(env),
                           capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()
    return yaml.safe_load(r.stdout), ""


def config_env_names():
    """ONCECOUNT_<SECTION>_<KEY> for every key the service accepts from the environment."""
    effective, message = check_config("{}\n")
    if effective is None:
        raise SystemExit("check-config rejects an empty configuration: " + message)
    return {f"ONCECOUNT_{section}_{key}".upper()
            for section, keys in effective.items() for key in keys if key != "properties"}


_EXPOSED = None
_EXPOSITION = None


def exposed_metrics():
    """The metric families of a running `oncecount serve` (embedded Kafka), from # TYPE."""
    global _EXPOSED, _EXPOSITION
    if _EXPOSED is not None:
        return _EXPOSED
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "c.yaml")
        with open(config, "w") as f:
            f.write("kafka: {bootstrap_servers: embedded}\nprocessing: {threads: 1}\n"
                    "http: {listen: '127.0.0.1:0'}\nstate: {dir: %s}\n" % d)
        p = subprocess.Popen([ARGS.binary, "serve", "--config", config, "--instance-id", "deploy-test"],
                             env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
        try:
            url = p.stdout.readline().strip()  # serve prints its URL first
            if not url.startswith("http://"):
                raise SystemExit(f"oncecount serve did not print its URL (got {url!r})")
            body = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
    names = set()
    for line in body.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            names.add(m.group(1))
            if m.group(2) in ("histogram", "summary"):
                names |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
    if not names:
        raise SystemExit("GET /metrics listed no metric families")
    _EXPOSED = names
    _EXPOSITION = body
    return names


def check_promtool(exposition=None):
    """Prometheus's own linter accepts what GET /metrics serves and the alert rules, and
    the rules pass their unit tests (tests/deploy/alerts_test.yml)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return ["promtool is not installed (scripts/setup installs Debian's prometheus for it)"]
    if exposition is None:
        exposed_metrics()
        exposition = _EXPOSITION
    r = subprocess.run([promtool, "check", "metrics"], input=exposition, capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        return ["promtool check metrics: " + (r.stdout + r.stderr).strip()]
    problems = []
    for command in (["check", "rules", src("deploy", "prometheus", "alerts.yml")],
                    ["test", "rules", src("tests", "deploy", "alerts_test.yml")]):
        r = subprocess.run([promtool] + command, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            problems.append("promtool " + " ".join(command[:2]) + ": " +
                            (r.stdout + r.stderr).strip())
    return problems


def metric_names(text):
    return set(re.findall(r"\boncecount_[a-z0-9_]+", text))


# --- Small helpers for the files -----------------------------------------------------

def compose_value(v):
    """A compose value with ${VAR:-default} / ${VAR-default} resolved to the default."""
    if not isinstance(v, str):
        return v
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}", r"\1", v)


def env_map(environment):
    if environment is None:
        return {}
    if isinstance(environment, list):
        return dict(e.split("=", 1) if "=" in e else (e, "") for e in environment)
    return {k: "" if v is None else str(compose_value(v)) for k, v in environment.items()}


def listen_port(effective):
    return int(str(effective["http"]["listen"]).rsplit(":", 1)[1])


def argv(command):
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command or []]


def flag(args, name):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


# --- yaml ----------------------------------------------------------------------------

def deploy_files(ext):
    out = []
    for root, _, files in os.walk(src("deploy")):
        out += [os.path.join(root, f) for f in files if f.endswith(ext)]
    return sorted(out)


def check_yaml():
    problems = []
    files = deploy_files((".yml", ".yaml"))
    if len(files) < 5:
        problems.append(f"only {len(files)} YAML files under deploy/")
    for path in files:
        try:
            docs = [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d is not None]
            if not docs:
                problems.append(f"{path}: no document")
        except yaml.YAMLError as e:
            problems.append(f"{path}: {e}")
    for path in deploy_files(".json"):
        try:
            json.load(open(path, encoding="utf-8"))
        except ValueError as e:
            problems.append(f"{path}: {e}")
    return problems


# --- configs -------------------------------------------------------------------------

def compose_instances(compose):
    """The compose services that run `oncecount serve`."""
    return {name: s for name, s in compose["services"].items() if argv(s.get("command"))[:1] == ["serve"]}


def statefulset_container(k8s):
    sts = [d for d in k8s if d["kind"] == "StatefulSet"][0]
    return sts["spec"]["template"]["spec"]["containers"][0]


def configmap_config(k8s):
    return [d for d in k8s if d["kind"] == "ConfigMap" and "oncecount.yaml" in d.get("data", {})][0][
        "data"]["oncecount.yaml"]


def k8s_docs():
    docs = []
    for name in sorted(os.listdir(src("deploy", "kubernetes"))):
        if name.endswith(".yaml") and name != "kustomization.yaml":
            docs += load_all("deploy", "kubernetes", name)
    return docs


def compose_config_text(service):
    for v in service.get("volumes", []):
        host, target = str(v).split(":")[:2]
        if target == CONFIG_PATH:
            return read("deploy", os.path.normpath(host))
    return None


def check_configs(compose=None, k8s=None, image_config=None):
    compose = compose or load_all("deploy", "docker-compose.yml")[0]
    k8s = k8s or k8s_docs()
    image_config = image_config if image_config is not None else read("deploy", "oncecount.image.yaml")
    problems = []
    known_env = config_env_names()

    # A check-config that accepts anything proves nothing.
    if check_config("dedup: {windw_ms: 1000}\n")[0] is not None:
        problems.append("check-config accepted an unknown key")
    if check_config("{}\n", {"ONCECOUNT_DEDUP_WINDOWMS": "1000"})[0] is not None:
        problems.append("check-config accepted a misspelt environment override")

    effective, message = check_config(image_config)
    if effective is None:
        problems.append("deploy/oncecount.image.yaml: " + message)
    elif not str(effective["http"]["listen"]).startswith("0.0.0.0:"):
        problems.append("deploy/oncecount.image.yaml: http.listen must accept connections from "
                        "outside the container (0.0.0.0:PORT)")

    deployed = []  # (where, config text, environment)
    for name, service in compose_instances(compose).items():
        text = compose_config_text(service)
        if text is None:
            problems.append(f"compose service {name}: no config file mounted at {CONFIG_PATH}")
            continue
        deployed.append((f"compose service {name}", text, env_map(service.get("environment"))))
    container = statefulset_container(k8s)
    k8s_env = {e["name"]: e.get("value", "") for e in container.get("env", []) if "value" in e}
    deployed.append(("ConfigMap oncecount-config", configmap_config(k8s), k8s_env))
    if len(deployed) < 3:
        problems.append("expected two compose instances and the ConfigMap's configuration")

    for where, text, env in deployed:
        for var in env:
            if var.startswith("ONCECOUNT_") and var not in known_env:
                problems.append(f"{where}: {var} is no configuration key (known: {sorted(known_env)})")
        for label, overrides in (("file", {}), ("file + environment", env)):
            effective, message = check_config(text, {k: v for k, v in overrides.items()
                                                     if k.startswith("ONCECOUNT_")})
            if effective is None:
                problems.append(f"{where} ({label}): {message}")
                continue
            if effective["kafka"]["bootstrap_servers"] == "embedded":
                problems.append(f"{where} ({label}): kafka.bootstrap_servers is embedded")
            if int(effective["processing"]["standby_replicas"]) < 1:
                problems.append(f"{where} ({label}): processing.standby_replicas should be 1")
            if not str(effective["http"]["listen"]).startswith("0.0.0.0:"):
                problems.append(f"{where} ({label}): http.listen should be 0.0.0.0:PORT")
    return problems


# --- topics --------------------------------------------------------------------------

STUB = r'''#!/usr/bin/env python3
# Stand-in for kafka-topics.sh: keeps topics in a JSON file, logs every call.
import json, os, sys
state_file = os.environ["STUB_STATE"]
state = json.load(open(state_file)) if os.path.exists(state_file) else {}
args = sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
def opt(name):
    return args[args.index(name) + 1] if name in args else None
assert opt("--bootstrap-server"), "no --bootstrap-server"
topic = opt("--topic")
if "--create" in args:
    if topic in state:
        if "--if-not-exists" in args:
            sys.exit(0)
        sys.exit("Topic '%s' already exists." % topic)
    configs = {}
    for i, a in enumerate(args):
        if a == "--config":
            k, v = args[i + 1].split("=", 1)
            configs[k] = v
    state[topic] = {"partitions": int(opt("--partitions")),
                    "replication_factor": int(opt("--replication-factor")), "configs": configs}
    json.dump(state, open(state_file, "w"))
elif "--describe" in args:
    if topic not in state:
        sys.exit("Error while executing topic command : Topic '%s' does not exist" % topic)
    t = state[topic]
    print("Topic: %s\tTopicId: x\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s"
          % (topic, t["partitions"], t["replication_factor"],
             ",".join("%s=%s" % kv for kv in t["configs"].items())))
    for p in range(t["partitions"]):
        print("\tTopic: %s\tPartition: %d\tLeader: 1\tReplicas: 1\tIsr: 1" % (topic, p))
else:
    sys.exit("unexpected call: %s" % args)
'''


def run_topics_script(script_text, env, existing=None):
    """Runs a create-topics script against the stub: (exit code, output, topics)."""
    with tempfile.TemporaryDirectory() as d:
        stub = os.path.join(d, "kafka-topics.sh")
        with open(stub, "w") as f:
            f.write(STUB)
        os.chmod(stub, 0o755)
        script = os.path.join(d, "create-topics.sh")
        with open(script, "w") as f:
            f.write(script_text)
        state = os.path.join(d, "state.json")
        if existing:
            json.dump(existing, open(state, "w"))
        run_env = dict(os.environ, STUB_STATE=state, STUB_LOG=os.path.join(d, "log"))
        run_env.update(env)
        run_env["KAFKA_TOPICS"] = stub
        r = subprocess.run(["/bin/sh", script], env=run_env, capture_output=True, text=True, timeout=60)
        topics = json.load(open(state)) if os.path.exists(state) else {}
        return r.returncode, r.stdout + r.stderr, topics


def service_topics(effective):
    """The topics the service needs for an effective configuration, as in
    config/config.h (ChangelogTopic, MembersTopic) and processor/cmd/service_topics.cc."""
    k = effective["kafka"]
    return {"input": k["input_topic"], "dlq": k["dlq_topic"],
            "changelog": k["input_topic"] + ".changelog", "members": k["input_topic"] + ".members"}


def topic_problems(where, topics, names, partitions):
    problems = []
    for role, name in names.items():
        if name not in topics:
            problems.append(f"{where}: the {role} topic {name} was not created")
    if problems:
        return problems
    count = topics[names["input"]]["partitions"]
    if partitions is not None and count != partitions:
        problems.append(f"{where}: {names['input']} has {count} partitions, expected {partitions}")
    if topics[names["changelog"]]["partitions"] != count:
        problems.append(f"{where}: the changelog needs as many partitions as the input")
    if topics[names["members"]]["partitions"] != 1:
        problems.append(f"{where}: the members topic needs exactly one partition")
    changelog = topics[names["changelog"]]["configs"]
    # Changelog records have no key and are read in log order: compaction would refuse
    # them (a compacted topic rejects keyless records) or drop batches a restore needs.
    if "compact" in changelog.get("cleanup.policy", "delete"):
        problems.append(f"{where}: the changelog must not be compacted")
    if changelog.get("retention.bytes", "-1") == "-1" and changelog.get("retention.ms") != "-1":
        problems.append(f"{where}: the changelog's retention must be by size (retention.ms=-1 and "
                        "a bounded retention.bytes), so an idle shard keeps its snapshot")
    if changelog.get("retention.ms", "") != "-1":
        problems.append(f"{where}: the changelog must not expire by time (retention.ms=-1)")
    for name in names.values():
        rf = topics[name]["replication_factor"]
        isr = int(topics[name]["configs"].get("min.insync.replicas", "1"))
        if isr > rf:
            problems.append(f"{where}: {name} has min.insync.replicas {isr} above its replication "
                            f"factor {rf}: no write could succeed")
    return problems


def check_topics(script_text=None, compose=None, k8s=None, config_map_script=None):
    script_text = script_text if script_text is not None else read("deploy", "create-topics.sh")
    compose = compose or load_all("deploy", "docker-compose.yml")[0]
    k8s = k8s or k8s_docs()
    problems = []
    defaults, _ = check_config("kafka: {input_topic: orders}\n")
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", "-s", "sh", src("deploy", "create-topics.sh")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("shellcheck deploy/create-topics.sh:\n" + r.stdout)
    else:
        print("note: shellcheck not found, deploy/create-topics.sh not linted")

    # A new cluster.
    code, out, topics = run_topics_script(script_text, {"BOOTSTRAP": "k:9092", "INPUT_TOPIC": "orders",
                                                        "PARTITIONS": "6", "REPLICATION_FACTOR": "3",
                                                        "MIN_INSYNC_REPLICAS": "2"})
    if code != 0:
        problems.append(f"create-topics.sh failed on an empty cluster: {out}")
    problems += topic_problems("empty cluster", topics, service_topics(defaults), 6)

    # Regression: a min.insync.replicas above the replication factor was created and
    # reported ready; every acks=all write then fails.
    code, out, topics = run_topics_script(script_text, {"BOOTSTRAP": "k:9092", "INPUT_TOPIC": "orders",
                                                        "REPLICATION_FACTOR": "1",
                                                        "MIN_INSYNC_REPLICAS": "2"})
    if code == 0 or topics:
        problems.append("create-topics.sh accepted MIN_INSYNC_REPLICAS 2 with REPLICATION_FACTOR 1")

    # An input topic that exists: the others follow its partition count.
    existing = {"orders": {"partitions": 3, "replication_factor": 3, "configs": {}}}
    code, out, topics = run_topics_script(script_text, {"BOOTSTRAP": "k:9092", "INPUT_TOPIC": "orders",
                                                        "PARTITIONS": "6"}, existing)
    if code != 0:
        problems.append(f"create-topics.sh failed beside an existing input topic: {out}")
    problems += topic_problems("existing input topic", topics, service_topics(defaults), 3)

    # A changelog that exists with the wrong partition count must stop it.
    existing["orders.changelog"] = {"partitions": 5, "replication_factor": 3,
                                    "configs": {"cleanup.policy": "delete"}}
    code, out, _ = run_topics_script(script_text, {"BOOTSTRAP": "k:9092", "INPUT_TOPIC": "orders"}, existing)
    if code == 0:
        problems.append("create-topics.sh accepted a changelog with 5 partitions for an input with 3")

    # The compose file's topics service creates what its instances use.
    topics_service = compose["services"].get("topics", {})
    if not any("create-topics.sh" in str(v) for v in topics_service.get("volumes", [])):
        problems.append("compose: the topics service does not mount create-topics.sh")
    env = env_map(topics_service.get("environment"))
    code, out, topics = run_topics_script(script_text, env)
    if code != 0:
        problems.append(f"compose topics service: create-topics.sh failed: {out}")
    for name, service in compose_instances(compose).items():
        effective, message = check_config(compose_config_text(service) or "",
                                          {k: v for k, v in env_map(service.get("environment")).items()
                                           if k.startswith("ONCECOUNT_")})
        if effective is None:
            problems.append(f"compose {name}: {message}")
            continue
        problems += topic_problems(f"compose {name}", topics, service_topics(effective), None)
        if effective["kafka"]["bootstrap_servers"] != env.get("BOOTSTRAP"):
            problems.append(f"compose {name}: talks to {effective['kafka']['bootstrap_servers']}, "
                            f"the topics service to {env.get('BOOTSTRAP')}")

    # The Kubernetes Job: the ConfigMap's script is deploy/create-topics.sh, and it
    # creates what the ConfigMap's configuration names.
    if config_map_script is None:
        scripts = [d["data"]["create-topics.sh"] for d in k8s
                   if d["kind"] == "ConfigMap" and "create-topics.sh" in d.get("data", {})]
        config_map_script = scripts[0] if scripts else ""
    if config_map_script != script_text:
        problems.append("ConfigMap oncecount-topics differs from deploy/create-topics.sh "
                        "(copy the file into it)")
    jobs = [d for d in k8s if d["kind"] == "Job"]
    if not jobs:
        problems.append("kubernetes: no topic Job")
    else:
        job = jobs[0]["spec"]["template"]["spec"]
        env = {e["name"]: e["value"] for e in job["containers"][0].get("env", []) if "value" in e}
        code, out, topics = run_topics_script(config_map_script, env)
        if code != 0:
            problems.append(f"kubernetes Job: create-topics.sh failed: {out}")
        effective, message = check_config(configmap_config(k8s))
        if effective is None:
            problems.append("ConfigMap oncecount-config: " + message)
        else:
            problems += topic_problems("kubernetes Job", topics, service_topics(effective), None)
            if effective["kafka"]["bootstrap_servers"] != env.get("BOOTSTRAP"):
                problems.append("kubernetes: the Job's BOOTSTRAP differs from kafka.bootstrap_servers")
    return problems


# --- compose -------------------------------------------------------------------------

def project_version():
    """The VERSION of project() in CMakeLists.txt: the tag of the images deployed."""
    return re.search(r"project\(oncecount VERSION ([0-9.]+)", read("CMakeLists.txt")).group(1)


def compose_parser_problems():
    """Debian's docker-compose parses and validates the file without a container engine."""
    compose = shutil.which("docker-compose")
    if compose is None:
        return ["compose: docker-compose is not installed (scripts/setup installs it)"]
    r = subprocess.run([compose, "-f", src("deploy", "docker-compose.yml"), "config", "-q"],
                       capture_output=True, text=True, timeout=120)
    return [] if r.returncode == 0 else ["docker-compose config: " + r.stderr.strip()]


def check_compose(compose=None, prometheus=None):
    problems = [] if compose else compose_parser_problems()
    compose = compose or load_all("deploy", "docker-compose.yml")[0]
    prometheus = prometheus or load_all("deploy", "prometheus", "prometheus.yml")[0]
    services = compose.get("services", {})
    kafka = services.get("kafka")
    if not kafka:
        return ["compose: no kafka service"]
    kenv = env_map(kafka.get("environment"))
    if "controller" not in kenv.get("KAFKA_PROCESS_ROLES", "") or any("zookeeper" in str(v).lower()
                                                                        for v in services):
        problems.append("compose: Kafka must run in KRaft mode (KAFKA_PROCESS_ROLES with controller)")
    brokers = sum(1 for s in services.values()
                  if "broker" in env_map(s.get("environment")).get("KAFKA_PROCESS_ROLES", ""))
    for key in ("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"):
        if int(kenv.get(key, "3")) > brokers:
            problems.append(f"compose: {key} above the {brokers} broker(s): transactions cannot start")
    log_dirs = kenv.get("KAFKA_LOG_DIRS")
    if not log_dirs or not any(str(v).split(":")[-1] == log_dirs for v in kafka.get("volumes", [])):
        problems.append("compose: KAFKA_LOG_DIRS must be set and on a volume (the image's "
                        "default is under /tmp)")
    version = project_version()
    for name, svc in services.items():
        image = str(svc.get("image", ""))
        if image.startswith("oncecount") and image != f"oncecount:{version}":
            problems.append(f"compose {name}: image {image}, expected oncecount:{version}")
    if "healthcheck" not in kafka:
        problems.append("compose: kafka has no healthcheck (the topics service waits for it)")
    topics = services.get("topics", {})
    if topics.get("depends_on", {}).get("kafka", {}).get("condition") != "service_healthy":
        problems.append("compose: the topics service must wait for kafka to be healthy")

    instances = compose_instances(compose)
    if len(instances) < 2:
        problems.append(f"compose: {len(instances)} oncecount instance(s); standbys need two")
    ids = [flag(argv(s.get("command")), "--instance-id") for s in instances.values()]
    if None in ids or len(set(ids)) != len(ids):
        problems.append(f"compose: every instance needs its own --instance-id (got {ids})")
    targets = set()
    for name, s in instances.items():
        args = argv(s.get("command"))
        if flag(args, "--config") != CONFIG_PATH:
            problems.append(f"compose {name}: serve --config {CONFIG_PATH} expected")
        for v in s.get("volumes", []):
            host = str(v).split(":")[0]
            if host.startswith(".") and not os.path.exists(src("deploy", host)):
                problems.append(f"compose {name}: mounts {host}, which does not exist")
        build = s.get("build", {})
        if build and not os.path.exists(src("deploy", build.get("context", "."),
                                            build.get("dockerfile", "Dockerfile"))):
            problems.append(f"compose {name}: its build context has no Dockerfile")
        if s.get("depends_on", {}).get("topics", {}).get("condition") != "service_completed_successfully":
            problems.append(f"compose {name}: must start after the topics service completed")
        effective, message = check_config(compose_config_text(s) or "")
        if effective is None:
            problems.append(f"compose {name}: {message}")
            continue
        port = listen_port(effective)
        published = [str(p).rsplit(":", 1)[-1] for p in s.get("ports", [])]
        if published and str(port) not in published:
            problems.append(f"compose {name}: publishes {published}, the API listens on {port}")
        targets.add(f"{name}:{port}")
    for svc in services.values():
        for v in svc.get("volumes", []):
            host = str(v).split(":")[0]
            if host.startswith(".") and not os.path.exists(src("deploy", host)):
                problems.append(f"compose: mounts {host}, which does not exist")
    scraped = set()
    for job in prometheus.get("scrape_configs", []):
        for sc in job.get("static_configs", []):
            scraped |= set(sc.get("targets", []))
    if targets and scraped != targets:
        problems.append(f"prometheus.yml scrapes {sorted(scraped)}, compose runs {sorted(targets)}")
    return problems


# --- kubernetes ----------------------------------------------------------------------

def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def kustomize_problems(k8s):
    """`kubectl kustomize` renders the directory offline, when kubectl is installed (it is
    not a Debian package of scripts/setup, so its absence only skips this part)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("note: kubectl not found, `kubectl kustomize deploy/kubernetes` not tried")
        return []
    r = subprocess.run([kubectl, "kustomize", src("deploy", "kubernetes")], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        return ["kubectl kustomize deploy/kubernetes: " + r.stderr.strip()]
    rendered = sorted((d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(r.stdout) if d)
    files = sorted((d["kind"], d["metadata"]["name"]) for d in k8s)
    if rendered != files:
        return [f"kubectl kustomize renders {rendered}, the files hold {files}"]
    return []


def restricted_problems(where, pod):
    """What keeps a pod out of the Pod Security Standard "restricted"."""
    problems = []
    pod_security = pod.get("securityContext", {})
    for c in pod.get("initContainers", []) + pod.get("containers", []):
        security = dict(pod_security, **c.get("securityContext", {}))
        name = f"{where}, container {c['name']}"
        if not security.get("runAsNonRoot"):
            problems.append(f"{name}: runAsNonRoot")
        if security.get("seccompProfile", {}).get("type") not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile RuntimeDefault")
        if c.get("securityContext", {}).get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation: false")
        if "ALL" not in c.get("securityContext", {}).get("capabilities", {}).get("drop", []):
            problems.append(f"{name}: capabilities.drop [ALL]")
    return problems


def check_kubernetes(k8s=None, kustomization=None):
    k8s = k8s or k8s_docs()
    kustomization = kustomization or load_all("deploy", "kubernetes", "kustomization.yaml")[0]
    problems = []
    kinds = [d["kind"] for d in k8s]
    for kind in ("StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget", "Job"):
        if kind not in kinds:
            problems.append(f"kubernetes: no {kind}")
    if problems:
        return problems
    present = {n for n in os.listdir(src("deploy", "kubernetes")) if n.endswith(".yaml")}
    listed = set(kustomization.get("resources", []))
    if listed != present - {"kustomization.yaml"}:
        problems.append(f"kustomization.yaml lists {sorted(listed)}, the directory holds "
                        f"{sorted(present - {'kustomization.yaml'})}")

    sts = [d for d in k8s if d["kind"] == "StatefulSet"][0]
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    if not matches(spec["selector"]["matchLabels"], labels):
        problems.append("StatefulSet: its selector does not match its pod labels")
    services = {d["metadata"]["name"]: d for d in k8s if d["kind"] == "Service"}
    headless = services.get(spec.get("serviceName"))
    if headless is None or headless["spec"].get("clusterIP") != "None":
        problems.append("StatefulSet: serviceName must name a headless Service (clusterIP: None)")
    for name, s in services.items():
        if not matches(s["spec"].get("selector"), labels):
            problems.append(f"Service {name}: selects no oncecount pod")
    for pdb in (d for d in k8s if d["kind"] == "PodDisruptionBudget"):
        if not matches(pdb["spec"]["selector"]["matchLabels"], labels):
            problems.append("PodDisruptionBudget: selects no oncecount pod")

    container = pod["containers"][0]
    args = argv(container.get("command", [])) + argv(container.get("args", []))
    if args[:1] != ["serve"] or flag(args, "--config") != CONFIG_PATH:
        problems.append(f"StatefulSet: expected args serve --config {CONFIG_PATH}")
    instance = flag(args, "--instance-id") or ""
    var = re.fullmatch(r"\$\((\w+)\)", instance)
    env = {e["name"]: e for e in container.get("env", [])}
    if not var or env.get(var.group(1), {}).get("valueFrom", {}).get("fieldRef", {}).get(
            "fieldPath") != "metadata.name":
        problems.append("StatefulSet: --instance-id should be the pod name ($(POD_NAME) from "
                        "fieldRef metadata.name): stable and distinct")
    effective, message = check_config(configmap_config(k8s))
    if effective is None:
        return problems + ["ConfigMap oncecount-config: " + message]
    if spec.get("replicas", 1) < int(effective["processing"]["standby_replicas"]) + 1:
        problems.append("StatefulSet: fewer replicas than standby_replicas + 1")
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    if listen_port(effective) not in ports.values():
        problems.append(f"StatefulSet: no containerPort {listen_port(effective)} (http.listen)")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container.get(probe, {}).get("httpGet", {})
        port = ports.get(get.get("port"), get.get("port"))
        if get.get("path") != path or port != listen_port(effective):
            problems.append(f"StatefulSet: {probe} should GET {path} on port {listen_port(effective)}")
    requests = container.get("resources", {}).get("requests", {})
    if "cpu" not in requests or "memory" not in requests:
        problems.append("StatefulSet: resource requests for cpu and memory")
    security = dict(pod.get("securityContext", {}), **container.get("securityContext", {}))
    startup = container.get("startupProbe", {})
    if startup.get("httpGet", {}).get("path") != "/healthz" or \
            startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3) < 120:
        problems.append("StatefulSet: a startupProbe on /healthz that allows at least 2 minutes "
                        "(the first init_transactions can take tens of seconds)")
    for image in kustomization.get("images", []):
        if image.get("name") == "oncecount" and str(image.get("newTag")) != project_version():
            problems.append(f"kustomization.yaml: oncecount image tag {image.get('newTag')}, "
                            f"expected the project's version {project_version()}")
    for d in k8s:
        if d["kind"] in ("StatefulSet", "Job", "Deployment", "DaemonSet"):
            problems += restricted_problems(f"{d['kind']} {d['metadata']['name']}",
                                            d["spec"]["template"]["spec"])
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    config_volume = volumes.get(mounts.get(os.path.dirname(CONFIG_PATH)), {})
    if config_volume.get("configMap", {}).get("name") != "oncecount-config":
        problems.append(f"StatefulSet: {os.path.dirname(CONFIG_PATH)} should mount ConfigMap oncecount-config")
    if security.get("readOnlyRootFilesystem") and str(effective["state"]["dir"]) not in mounts:
        problems.append("StatefulSet: a read-only root file system needs a volume at state.dir")
    problems += kustomize_problems(k8s)
    job = [d for d in k8s if d["kind"] == "Job"][0]["spec"]["template"]["spec"]
    job_volumes = [v.get("configMap", {}).get("name") for v in job.get("volumes", [])]
    if "oncecount-topics" not in job_volumes or "create-topics.sh" not in " ".join(
            argv(job["containers"][0].get("command", [])) + argv(job["containers"][0].get("args", []))):
        problems.append("Job: should run create-topics.sh from ConfigMap oncecount-topics")
    return problems


# --- dashboard and prometheus --------------------------------------------------------

REQUIRED_ON_DASHBOARD = [
    "oncecount_events_applied_total", "oncecount_duplicates_dropped_total",
    "oncecount_dead_lettered_total", "oncecount_filter_estimated_fpp", "oncecount_filter_target_fpp",
    "oncecount_filter_constituents", "oncecount_filter_refresh_period_seconds",
    "oncecount_replica_lag_seconds", "oncecount_shards", "oncecount_input_lost_messages_total",
    "oncecount_near_edge_duplicates_total", "oncecount_commit_duration_seconds",
    "oncecount_restore_duration_seconds", "oncecount_replica_rebuilds_total",
    "oncecount_worker_mailbox_depth", "oncecount_open_transaction_age_seconds",
    "oncecount_restore_progress_ratio",
]


def check_dashboard(dashboard=None):
    if dashboard is None:
        try:
            dashboard = json.loads(read("deploy", "grafana", "oncecount-dashboard.json"))
        except ValueError as e:
            return [f"oncecount-dashboard.json: {e}"]
    problems = []
    exposed = exposed_metrics()
    variables = {v["name"] for v in dashboard.get("templating", {}).get("list", [])}
    ids = []
    referenced = set()
    for p in dashboard.get("panels", []):
        ids.append(p.get("id"))
        if p.get("type") == "row":
            continue
        targets = p.get("targets", [])
        if not targets or not all(t.get("expr", "").strip() for t in targets):
            problems.append(f"panel {p.get('title')!r}: a query without expr")
        for t in targets:
            referenced |= metric_names(t.get("expr", ""))
            for v in re.findall(r"\$(\w+)", t.get("expr", "")):
                if not v.startswith("__") and v not in variables:
                    problems.append(f"panel {p.get('title')!r}: ${v} is no dashboard variable")
        uid = str(p.get("datasource", {}).get("uid", ""))
        if uid.startswith("$") and uid.strip("${}") not in variables:
            problems.append(f"panel {p.get('title')!r}: data source {uid} is no dashboard variable")
    for v in dashboard.get("templating", {}).get("list", []):
        q = v.get("query")
        referenced |= metric_names(q.get("query", "") if isinstance(q, dict) else str(q or ""))
    if len(ids) != len(set(ids)):
        problems.append("dashboard: panel ids repeat")
    for name in sorted(referenced - exposed):
        problems.append(f"dashboard queries {name}, which GET /metrics does not expose")
    for name in REQUIRED_ON_DASHBOARD:
        # A histogram is shown through its series.
        if not referenced & {name, name + "_bucket", name + "_sum", name + "_count"}:
            problems.append(f"dashboard: nothing shows {name}")
    if not dashboard.get("uid") or not dashboard.get("title"):
        problems.append("dashboard: uid and title")
    return problems


def check_prometheus(prometheus=None, alerts=None):
    prometheus = prometheus or load_all("deploy", "prometheus", "prometheus.yml")[0]
    problems = []
    jobs = prometheus.get("scrape_configs", [])
    if not any(j.get("metrics_path", "/metrics") == "/metrics" for j in jobs):
        problems.append("prometheus.yml: no job scrapes /metrics")
    exposed = exposed_metrics()
    for rule_file in prometheus.get("rule_files", []):
        local = src("deploy", "prometheus", os.path.basename(rule_file))
        if not os.path.exists(local):
            problems.append(f"prometheus.yml: rule file {rule_file} is not in deploy/prometheus/")
            continue
        rules = alerts if alerts is not None else yaml.safe_load(open(local, encoding="utf-8"))
        for group in rules.get("groups", []):
            for rule in group.get("rules", []):
                for name in sorted(metric_names(rule.get("expr", "")) - exposed):
                    problems.append(f"{rule_file}: {rule.get('alert')} queries {name}, "
                                    "which GET /metrics does not expose")
    return problems


# --- dockerfile ----------------------------------------------------------------------

def dockerfile_stages(text):
    """[(FROM line, [(instruction, argument)])], continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            stages.append((rest.strip(), []))
        elif stages:
            stages[-1][1].append((instruction, rest.strip()))
    return stages


def apt_packages(run_argument):
    """Packages named by `apt-get install` in a RUN argument."""
    out = []
    for command in re.split(r"&&|;|\|\|", run_argument):
        words = shlex.split(command)
        if "apt-get" in words and "install" in words:
            out += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return out


def setup_packages():
    m = re.search(r"packages=\((.*?)\)", read("scripts", "setup"), re.S)
    return set(m.group(1).split()) if m else set()


def library_packages(binary):
    """The Debian packages that hold the binary's shared libraries. The sanitizer
    runtimes are left out: CI also runs this check on the ASan + UBSan build, and the
    image is built without sanitizers."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True)
    packages = set()
    for line in r.stdout.splitlines():
        m = re.search(r"=> (/\S+)", line)
        if not m or re.search(r"/lib(asan|ubsan|lsan|tsan)\.so", m.group(1)):
            continue
        for path in (os.path.realpath(m.group(1)), m.group(1)):
            q = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
            if q.returncode == 0:
                packages.add(q.stdout.split(":")[0])
                break
        else:
            raise SystemExit(f"dpkg -S: no package holds {m.group(1)}")
    return packages


def with_dependencies(packages):
    if not packages:
        return set()
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                        "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + sorted(packages),
                       capture_output=True, text=True)
    return set(packages) | {line.strip() for line in r.stdout.splitlines()
                            if line and not line.startswith((" ", "<"))}


def check_dockerfile(text=None, binary_packages=None):
    text = text if text is not None else read("Dockerfile")
    problems = []
    stages = dockerfile_stages(text)
    if len(stages) < 2:
        return ["Dockerfile: expected a build stage and a runtime stage"]
    (build_from, build), (run_from, runtime) = stages[0], stages[-1]
    if not build_from.startswith("debian:bookworm "):
        problems.append(f"Dockerfile: the build stage should be FROM debian:bookworm (is {build_from})")
    if not run_from.startswith("debian:bookworm"):
        problems.append(f"Dockerfile: the runtime stage should be Debian 12 (is {run_from})")

    runs = [arg for ins, arg in build if ins == "RUN"]
    setup_runs = [i for i, arg in enumerate(runs) if re.search(r"(^|\s|&&\s*)scripts/setup(\s|$|&&)", arg)]
    build_runs = [i for i, arg in enumerate(runs) if re.search(r"(^|\s|&&\s*)(\S+=\S+\s+)*scripts/build(\s|$)", arg)]
    if not setup_runs:
        problems.append("Dockerfile: the build stage must install its packages with scripts/setup")
    if not build_runs:
        problems.append("Dockerfile: the build stage must build with scripts/build")
    if setup_runs and build_runs and setup_runs[0] > build_runs[0]:
        problems.append("Dockerfile: scripts/setup must run before scripts/build")
    allowed = setup_packages()
    if not allowed:
        problems.append("scripts/setup: no packages=( ... ) list found")
    for arg in runs:
        for p in apt_packages(arg):
            if p not in allowed:
                problems.append(f"Dockerfile: the build stage installs {p}, which scripts/setup does not")
    if "build/processor/cmd/oncecount" not in " ".join(runs + [a for i, a in build if i == "COPY"]):
        problems.append("Dockerfile: does not take the binary from build/processor/cmd/oncecount")
    if not os.path.realpath(ARGS.binary).endswith("/processor/cmd/oncecount"):
        problems.append(f"the built binary is {ARGS.binary}, not <build>/processor/cmd/oncecount")

    installed = set()
    for ins, arg in runtime:
        if ins == "RUN":
            installed |= set(apt_packages(arg))
    needed = binary_packages if binary_packages is not None else library_packages(ARGS.binary)
    covered = with_dependencies(installed)
    for p in sorted(needed - covered):
        problems.append(f"Dockerfile: the runtime stage lacks {p} (a library of the binary)")
    if not ({"curl", "wget"} & installed) and any("curl" in a or "wget" in a for i, a in runtime
                                                   if i == "HEALTHCHECK"):
        problems.append("Dockerfile: HEALTHCHECK uses curl, which the runtime stage does not install")

    def last(instruction):
        values = [arg for ins, arg in runtime if ins == instruction]
        return values[-1] if values else None

    user = (last("USER") or "root").split(":")[0]
    if user in ("root", "0"):
        problems.append("Dockerfile: the runtime stage must run as a non-root USER")
    if "/healthz" not in (last("HEALTHCHECK") or ""):
        problems.append("Dockerfile: HEALTHCHECK should probe /healthz")
    try:
        entrypoint = json.loads(last("ENTRYPOINT") or "null")
        cmd = json.loads(last("CMD") or "null")
    except ValueError:
        entrypoint = cmd = None
    if not entrypoint or os.path.basename(entrypoint[0]) != "oncecount":
        problems.append("Dockerfile: ENTRYPOINT [\"oncecount\"] (exec form)")
    if not cmd or cmd[0] != "serve" or flag(cmd, "--config") != CONFIG_PATH:
        problems.append(f"Dockerfile: CMD [\"serve\", \"--config\", \"{CONFIG_PATH}\"]")
    copied = [arg.split() for ins, arg in runtime if ins == "COPY" and not arg.startswith("--from")]
    sources = [c[-2] for c in copied if len(c) >= 2 and c[-1] == CONFIG_PATH]
    if not sources:
        problems.append(f"Dockerfile: no COPY of a configuration to {CONFIG_PATH}")
    else:
        effective, message = check_config(read(sources[0]))
        if effective is None:
            problems.append(f"{sources[0]}: {message}")
        elif str(listen_port(effective)) not in (last("EXPOSE") or "").split():
            problems.append(f"Dockerfile: EXPOSE {last('EXPOSE')}, the image's config listens on "
                            f"{listen_port(effective)}")
    ignore = read(".dockerignore").split() if os.path.exists(src(".dockerignore")) else []
    if "build" not in ignore:
        problems.append(".dockerignore: should leave build/ out of the build context")
    return problems


# --- docs ----------------------------------------------------------------------------

def check_docs(operations=None, readme=None):
    operations = operations if operations is not None else read("docs", "operations.md")
    readme = readme if readme is not None else read("README.md")
    problems = []
    families = {n for n in exposed_metrics() if not n.endswith(("_bucket", "_sum", "_count"))}
    documented = metric_names(operations)
    for name in sorted(families - documented):
        problems.append(f"docs/operations.md does not describe {name}")
    for name in sorted(documented - exposed_metrics()):
        problems.append(f"docs/operations.md describes {name}, which GET /metrics does not expose")
    if "docs/operations.md" not in readme:
        problems.append("README.md does not link docs/operations.md")
    return problems


# --- selftest ------------------------------------------------------------------------

def check_selftest():
    """Every check, given a broken copy of its input, must find something."""
    problems = []
    compose = load_all("deploy", "docker-compose.yml")[0]
    k8s = k8s_docs()
    dashboard = json.loads(read("deploy", "grafana", "oncecount-dashboard.json"))
    dockerfile = read("Dockerfile")
    script = read("deploy", "create-topics.sh")

    def expect(label, found):
        if not found:
            problems.append(f"selftest: the check missed {label}")

    d = copy.deepcopy(dashboard)
    d["panels"][-1]["targets"][0]["expr"] = "rate(oncecount_made_up_total[5m])"
    expect("a dashboard query of an unexposed metric", check_dashboard(d))

    expect("a build stage package outside scripts/setup",
           check_dockerfile(dockerfile.replace("RUN scripts/setup", "RUN apt-get install -y libfoo-dev && scripts/setup"),
                            binary_packages=set()))
    expect("a build stage without scripts/build",
           check_dockerfile(dockerfile.replace("scripts/build", "cmake --build build"), binary_packages=set()))
    expect("a runtime stage without librdkafka1",
           check_dockerfile(dockerfile.replace("librdkafka1 ", ""), binary_packages={"librdkafka1"}))
    expect("a root runtime user", check_dockerfile(dockerfile.replace("USER 10001:10001", "USER root"),
                                                   binary_packages=set()))

    c = copy.deepcopy(compose)
    name = sorted(compose_instances(c))[0]
    c["services"][name]["environment"]["ONCECOUNT_DEDUP_WINDOWMS"] = "1000"
    expect("an environment variable that names no key", check_configs(compose=c, k8s=k8s))
    c = copy.deepcopy(compose)
    c["services"][name]["environment"]["ONCECOUNT_DEDUP_TARGET_FPP"] = "2"
    expect("an out-of-range override", check_configs(compose=c, k8s=k8s))
    expect("an image config with an unknown key",
           check_configs(compose=compose, k8s=k8s, image_config="http: {listen: '0.0.0.0:8080', port: 1}\n"))

    c = copy.deepcopy(compose)
    for s in compose_instances(c).values():
        s["command"] = [a if not a.startswith("oncecount-") else "same" for a in argv(s["command"])]
    expect("instances sharing an instance id", check_compose(compose=c))

    expect("a compacted changelog",
           check_topics(script_text=script.replace("cleanup.policy=delete \\\n  --config retention.ms=-1",
                                                   "cleanup.policy=compact \\\n  --config retention.ms=-1"),
                        config_map_script=script.replace("delete \\\n  --config retention.ms=-1",
                                                         "compact \\\n  --config retention.ms=-1")))
    expect("a ConfigMap script that differs from deploy/create-topics.sh",
           check_topics(config_map_script=script + "\n# drift\n"))

    k = copy.deepcopy(k8s)
    statefulset_container(k)["readinessProbe"]["httpGet"]["path"] = "/healthz"
    expect("readiness on /healthz", check_kubernetes(k8s=k))
    k = copy.deepcopy(k8s)
    [d for d in k if d["kind"] == "StatefulSet"][0]["spec"]["serviceName"] = "oncecount"
    expect("a StatefulSet whose service is not headless", check_kubernetes(k8s=k))
    k = copy.deepcopy(k8s)
    del statefulset_container(k)["startupProbe"]
    expect("no startup probe", check_kubernetes(k8s=k))
    k = copy.deepcopy(k8s)
    del [d for d in k if d["kind"] == "Job"][0]["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]
    expect("a Job without a seccomp profile", check_kubernetes(k8s=k))
    k = copy.deepcopy(k8s)
    del statefulset_container(k)["securityContext"]["allowPrivilegeEscalation"]
    expect("a container that may escalate privileges", check_kubernetes(k8s=k))
    kustomization = load_all("deploy", "kubernetes", "kustomization.yaml")[0]
    kustomization["images"][0]["newTag"] = "latest"
    expect("an image tagged latest", check_kubernetes(kustomization=kustomization))
    c = copy.deepcopy(compose)
    del c["services"]["kafka"]["environment"]["KAFKA_LOG_DIRS"]
    expect("a compose broker without KAFKA_LOG_DIRS", check_compose(compose=c))
    c = copy.deepcopy(compose)
    c["services"][name]["image"] = "oncecount:local"
    expect("a compose image without the version", check_compose(compose=c))

    expect("a counter promtool rejects", check_promtool("# HELP x X.\n# TYPE x counter\nx 1\n"))
    expect("an undocumented metric", check_docs(operations="nothing here\n", readme="docs/operations.md"))
    return problems


CHECKS = {
    "yaml": check_yaml, "configs": check_configs, "topics": check_topics, "compose": check_compose,
    "kubernetes": check_kubernetes, "dashboard": check_dashboard, "prometheus": check_prometheus,
    "dockerfile": check_dockerfile, "docs": check_docs, "promtool": check_promtool,
    "selftest": check_selftest,
}


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("--binary", required=True, help="the built oncecount binary")
    parser.add_argument("check", choices=sorted(CHECKS))
    ARGS = parser.parse_args()
    ARGS.source = os.path.abspath(ARGS.source)
    problems = CHECKS[ARGS.check]()
    for p in problems:
        print("FAIL " + p)
    print(f"{ARGS.check}: {'ok' if not problems else str(len(problems)) + ' problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
