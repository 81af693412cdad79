//! The packaging of the fleet, checked with the tools an operator would use:
//! - `scripts/image` builds the container image into an OCI archive; `skopeo inspect` reads
//!   its entrypoint, user and OCI labels, `umoci unpack` turns it into a root file system,
//!   and the binary in there runs as user 65532 inside a chroot of that file system alone
//!   (its own loader and libraries: nothing of the host): `--version` equals the built
//!   binary's, and `rfs export` of the demo repository gives the same documents, one by one.
//!   CI builds the image around the test's debug binary (already built, so no second,
//!   release build in CI); `scripts/image` alone builds it from a release build.
//! - Every manifest in `deploy/` passes `kubernetes-validate --strict` (the Kubernetes
//!   schemas ship inside that PyPI package: nothing is downloaded), a misspelt field is
//!   refused by it, and what schemas cannot see is checked here: the Job's SIGTERM grace
//!   covers the batches' 20 s, its memory request covers the measured RSS, its exit-code
//!   rules match rfs's exit codes, every `RFS_*` variable is one the binary's `--help`
//!   names, the budget and the Service select the pods they are meant for.
//!
//! buildah, skopeo, umoci (Debian) and kubernetes-validate (PyPI, in
//! `$RFS_TEST_TOOLS/venv`) come from `scripts/install-test-deps`; missing, the tests skip
//! with a message outside CI and fail under `CI=true`.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;
use common::{copy_demo, demo, rfs, show, LIVE, SNAPSHOT};

/// The user the image runs as (deploy/Containerfile, the manifests' securityContext).
const UID: u64 = 65532;
/// The image holds the binary plus its loader, libraries and CA bundle: a few MB.
const OVERHEAD_MAX: u64 = 16 << 20;
/// Peak RSS of one worker at `--parallel 8` (README, scripts/bench-e2e): 178–196 MB.
const MEASURED_RSS_MAX: u64 = 196_000_000;
/// Seconds a stopping worker gives its batches in flight (README, exit code 5).
const BATCH_GRACE_SECONDS: u64 = 20;

fn root() -> PathBuf {
    testkit::fixtures::workspace_root()
}

/// `tool` on PATH, or under `$RFS_TEST_TOOLS/venv/bin`.
fn find_tool(tool: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(t) = std::env::var_os("RFS_TEST_TOOLS") {
        dirs.push(PathBuf::from(t).join("venv").join("bin"));
    }
    dirs.into_iter().map(|d| d.join(tool)).find(|p| p.is_file())
}

fn tools(test: &str, names: &[&str]) -> Option<Vec<PathBuf>> {
    let found: Vec<Option<PathBuf>> = names.iter().map(|n| find_tool(n)).collect();
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        testkit::fixtures::skip(
            test,
            &format!(
                "{} not found (scripts/install-test-deps installs them)",
                missing.join(", ")
            ),
        );
        return None;
    }
    Some(found.into_iter().flatten().collect())
}

fn ok(mut c: Command) -> Output {
    let what = format!("{c:?}");
    let out = c
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what}\n{}", show(&out));
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The documents of `rfs export --format jsonl` output, one per line, sorted.
fn documents(jsonl: &str) -> Vec<Value> {
    let mut docs: Vec<Value> = jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    docs.sort_by_key(|d| d.to_string());
    docs
}

#[test]
fn image_runs_rfs_as_nonroot_from_its_own_root_file_system() {
    let test = "image_runs_rfs_as_nonroot_from_its_own_root_file_system";
    let Some(t) = tools(test, &["buildah", "skopeo", "umoci"]) else {
        return;
    };
    let (skopeo, umoci) = (&t[1], &t[2]);
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_rfs"));
    let dir = tempfile::tempdir().unwrap();

    // scripts/image around the binary under test; its last line is the archive.
    let mut c = Command::new(root().join("scripts/image"));
    c.arg("--binary").arg(&binary).arg("--out").arg(dir.path());
    let built = ok(c);
    let archive = PathBuf::from(stdout(&built).lines().last().unwrap_or_default().trim());
    assert!(
        archive.is_file(),
        "no archive at {archive:?}\n{}",
        show(&built)
    );

    // Size: the binary (without its debug information, as the script strips it) plus a
    // bounded overhead, compressed or not.
    let mut stripped = Command::new("strip");
    let plain = dir.path().join("rfs.stripped");
    stripped
        .arg("--strip-debug")
        .arg(&binary)
        .arg("-o")
        .arg(&plain);
    ok(stripped);
    let size = std::fs::metadata(&archive).unwrap().len();
    let bound = std::fs::metadata(&plain).unwrap().len() + OVERHEAD_MAX;
    assert!(
        size <= bound,
        "{archive:?} is {size} bytes, more than the binary + {OVERHEAD_MAX} = {bound}"
    );

    // skopeo: the OCI configuration and labels.
    let reference = format!("oci-archive:{}", archive.display());
    let mut c = Command::new(skopeo);
    c.args(["inspect", "--config", &reference]);
    let config: Value = serde_json::from_slice(&ok(c).stdout).unwrap();
    let cfg = &config["config"];
    assert_eq!(
        cfg["Entrypoint"],
        serde_json::json!(["/usr/local/bin/rfs"]),
        "{config:#}"
    );
    assert_eq!(cfg["User"], format!("{UID}:{UID}"), "{config:#}");
    assert_eq!(config["os"], "linux");
    let labels = &cfg["Labels"];
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        labels["org.opencontainers.image.version"], version,
        "{labels:#}"
    );
    assert_eq!(
        labels["org.opencontainers.image.title"], "rfs",
        "{labels:#}"
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    let revision = labels["org.opencontainers.image.revision"]
        .as_str()
        .unwrap_or_default();
    assert!(
        revision.len() >= 40 && revision[..40].bytes().all(|b| b.is_ascii_hexdigit()),
        "revision label {revision:?}"
    );
    let mut c = Command::new(skopeo);
    c.args(["inspect", &reference]);
    let manifest: Value = serde_json::from_slice(&ok(c).stdout).unwrap();
    assert_eq!(manifest["Architecture"], "amd64", "{manifest:#}");

    // umoci: the archive's layout unpacked into a runtime bundle.
    let layout = dir.path().join("layout");
    std::fs::create_dir(&layout).unwrap();
    let mut c = Command::new("tar");
    c.arg("-xf").arg(&archive).arg("-C").arg(&layout);
    ok(c);
    let bundle = dir.path().join("bundle");
    let mut c = Command::new(umoci);
    c.arg("unpack")
        .arg("--image")
        .arg(format!("{}:{version}", layout.display()))
        .arg(&bundle);
    ok(c);
    let rootfs = bundle.join("rootfs");
    let runtime: Value =
        serde_json::from_slice(&std::fs::read(bundle.join("config.json")).unwrap()).unwrap();
    assert_eq!(runtime["process"]["user"]["uid"], UID, "{runtime:#}");
    assert_eq!(
        runtime["process"]["args"],
        serde_json::json!(["/usr/local/bin/rfs", "--help"])
    );
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with(&format!("nonroot:x:{UID}:{UID}:"))),
        "{passwd}"
    );
    assert!(rootfs.join("etc/ssl/certs/ca-certificates.crt").is_file());
    let home = std::fs::metadata(rootfs.join("home/nonroot")).unwrap();
    assert_eq!((home.uid() as u64, home.gid() as u64), (UID, UID));
    let tmp = std::fs::metadata(rootfs.join("tmp")).unwrap();
    assert_eq!(
        tmp.mode() & 0o1777,
        0o1777,
        "/tmp is world-writable and sticky"
    );

    // The binary of the image, run from the image alone. As root (CI): chroot into the
    // root file system as user 65532, so nothing of the host can be loaded. Otherwise: the
    // image's own loader with the image's libraries.
    let as_root = std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0);
    let in_image = |args: &[&str]| -> Output {
        let mut c = if as_root {
            // The environment is cleared below: the tool by its full path.
            let mut c = Command::new(find_tool("chroot").expect("chroot on PATH"));
            c.arg(format!("--userspec={UID}:{UID}"))
                .arg(&rootfs)
                .arg("/usr/local/bin/rfs");
            c
        } else if rootfs.join("lib64/ld-linux-x86-64.so.2").is_file() {
            let mut c = Command::new(rootfs.join("lib64/ld-linux-x86-64.so.2"));
            c.arg("--library-path")
                .arg(rootfs.join("lib/x86_64-linux-gnu"))
                .arg(rootfs.join("usr/local/bin/rfs"));
            c
        } else {
            Command::new(rootfs.join("usr/local/bin/rfs"))
        };
        c.env_clear()
            .env("HOME", "/home/nonroot")
            .env("NO_COLOR", "1");
        c.args(args);
        ok(c)
    };
    let mut c = rfs();
    c.arg("--version");
    let expected = stdout(&ok(c));
    assert!(expected.contains(version), "{expected}");
    assert_eq!(stdout(&in_image(&["--version"])), expected);

    // Real work from inside the image: every live document of the demo repository.
    let repo_in_image = if as_root {
        copy_demo(&rootfs.join("tmp/demo"));
        "/tmp/demo".to_string()
    } else {
        demo().display().to_string()
    };
    let exported = in_image(&[
        "export",
        &repo_in_image,
        "--snapshot",
        SNAPSHOT,
        "--format",
        "jsonl",
        "--out",
        "-",
    ]);
    let mut c = rfs();
    c.arg("export")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--format", "jsonl", "--out", "-"]);
    let host = documents(&stdout(&ok(c)));
    let image = documents(&stdout(&exported));
    let live: usize = LIVE.iter().map(|(_, n)| n).sum();
    assert_eq!(host.len(), live);
    assert_eq!(image.len(), live, "{}", show(&exported));
    for (a, b) in image.iter().zip(&host) {
        assert_eq!(a, b);
    }
}

/// A child process killed when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every manifest of `deploy/`, each file as a list of JSON documents.
fn manifests(python: &Path) -> Vec<(String, Vec<Value>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("deploy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let mut c = Command::new(python);
            c.args([
                "-c",
                "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))",
            ])
            .arg(&f);
            let docs: Vec<Value> = serde_json::from_slice(&ok(c).stdout).unwrap();
            (f.file_name().unwrap().to_string_lossy().into_owned(), docs)
        })
        .collect()
}

fn find<'a>(all: &'a [(String, Vec<Value>)], kind: &str, name: &str) -> &'a Value {
    all.iter()
        .flat_map(|(_, docs)| docs)
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/"))
}

/// Kubernetes memory quantity in bytes (the suffixes the manifests use).
fn bytes(q: &str) -> u64 {
    let (n, mult) = [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)]
        .iter()
        .find_map(|(s, m)| q.strip_suffix(s).map(|n| (n, *m)))
        .unwrap_or((q, 1));
    n.parse::<u64>().unwrap_or_else(|e| panic!("{q}: {e}")) * mult
}

/// The `RFS_*` variables a subcommand's `--help` names.
fn help_env(subcommand: &str) -> BTreeSet<String> {
    let mut c = rfs();
    c.args([subcommand, "--help"]);
    let help = stdout(&ok(c));
    help.split("env: ")
        .skip(1)
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect::<String>()
        })
        .filter(|s| s.starts_with("RFS_"))
        .collect()
}

fn env_names(container: &Value) -> Vec<String> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

fn secret_ref<'a>(container: &'a Value, var: &str) -> &'a Value {
    let e = container["env"]
        .as_array()
        .and_then(|v| v.iter().find(|e| e["name"] == var))
        .unwrap_or_else(|| panic!("no {var} in {container:#}"));
    assert!(e.get("value").is_none(), "{var} must come from a Secret");
    &e["valueFrom"]["secretKeyRef"]
}

#[test]
fn manifests_validate_and_fit_rfs() {
    let test = "manifests_validate_and_fit_rfs";
    let Some(t) = tools(test, &["kubernetes-validate"]) else {
        return;
    };
    let validator = &t[0];
    // The venv's own interpreter has PyYAML (kubernetes-validate depends on it).
    let python = validator.with_file_name("python3");
    let deploy = root().join("deploy");

    // The schemas: every file, strictly (unknown fields are errors).
    let all = manifests(&python);
    assert!(
        all.len() >= 5,
        "{:?}",
        all.iter().map(|a| &a.0).collect::<Vec<_>>()
    );
    for (file, docs) in &all {
        assert!(!docs.is_empty(), "{file} holds no resource");
        let mut c = Command::new(validator);
        c.args(["--strict", "--quiet"]).arg(deploy.join(file));
        let out = ok(c);
        let said = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
        assert!(!said.contains("ERROR"), "{file}: {said}");
    }
    // …and the validator does refuse: the Job with a misspelt field.
    let dir = tempfile::tempdir().unwrap();
    let job_text = std::fs::read_to_string(deploy.join("rfs-job.yaml")).unwrap();
    let bad = dir.path().join("bad-job.yaml");
    std::fs::write(&bad, job_text.replacen("parallelism:", "parallelizm:", 1)).unwrap();
    let refused = Command::new(validator)
        .arg("--strict")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!refused.status.success(), "{}", show(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stdout).contains("parallelizm")
            || String::from_utf8_lossy(&refused.stderr).contains("parallelizm"),
        "{}",
        show(&refused)
    );

    // The worker Job.
    let job = find(&all, "Job", "rfs-migration");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let parallelism = spec["parallelism"].as_u64().unwrap();
    assert_eq!(spec["completions"].as_u64(), Some(parallelism));
    let pod = &spec["template"]["spec"];
    assert_eq!(
        pod["restartPolicy"], "Never",
        "podFailurePolicy needs Never"
    );
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        (BATCH_GRACE_SECONDS + 5..=BATCH_GRACE_SECONDS + 30).contains(&grace),
        "grace {grace} s: the batches' {BATCH_GRACE_SECONDS} s plus a margin"
    );
    assert_eq!(pod["securityContext"]["runAsUser"].as_u64(), Some(UID));
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    let codes = |action: &str| -> BTreeSet<u64> {
        rules
            .iter()
            .filter(|r| r["action"] == action)
            .flat_map(|r| {
                r["onExitCodes"]["values"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    // Usage errors and "finished with undelivered documents" end the Job; a stopped
    // fleet is not restarted; 0 is never a failure; evictions are not counted.
    assert_eq!(codes("FailJob"), BTreeSet::from([2, 7]));
    assert_eq!(codes("FailIndex"), BTreeSet::from([5]));
    assert!(
        spec["backoffLimitPerIndex"].as_u64().is_some(),
        "FailIndex needs it"
    );
    assert!(rules
        .iter()
        .any(|r| r["action"] == "Ignore" && r["onPodConditions"][0]["type"] == "DisruptionTarget"));
    let worker = &pod["containers"][0];
    assert_eq!(worker["name"], "rfs");
    assert_eq!(worker["args"][0], "run");
    let memory = bytes(worker["resources"]["requests"]["memory"].as_str().unwrap());
    assert!(
        memory >= MEASURED_RSS_MAX,
        "memory request {memory} < measured RSS"
    );
    let limit = bytes(worker["resources"]["limits"]["memory"].as_str().unwrap());
    assert!(limit >= memory);
    assert_eq!(secret_ref(worker, "RFS_STORE")["key"], "store");
    secret_ref(worker, "RFS_TARGET_PASSWORD");
    let known = help_env("run");
    for var in env_names(worker).iter().filter(|v| v.starts_with("RFS_")) {
        assert!(known.contains(var), "{var} is not a variable of `rfs run`");
    }
    // The values parse too: `rfs run` with the Job's arguments and variables (the
    // repository, store, target and files moved to this machine) gets as far as opening
    // the repository — no usage error (exit 2).
    let scratch = dir.path();
    let local = |var: &str, value: &str| -> String {
        match var {
            "RFS_REPO" => scratch.join("no-repository").display().to_string(),
            "RFS_STORE" => format!("sqlite://{}", scratch.join("store.db").display()),
            "RFS_TARGET" => "http://127.0.0.1:9".into(),
            "RFS_FAILURE_LOG" => scratch.join("failures.jsonl").display().to_string(),
            "RFS_METRICS_ADDR" => "127.0.0.1:0".into(),
            "RFS_SERVE_TOKEN" => "a-token-of-24-characters".into(),
            _ => value.into(),
        }
    };
    let with_env = |c: &mut Command, container: &Value| {
        for e in container["env"].as_array().into_iter().flatten() {
            let name = e["name"].as_str().unwrap();
            let value = e["value"].as_str().unwrap_or("from-a-secret");
            c.env(name, local(name, value));
        }
    };
    let mut c = rfs();
    for a in worker["args"].as_array().unwrap() {
        c.arg(a.as_str().unwrap());
    }
    with_env(&mut c, worker);
    let ran = c.output().unwrap();
    assert_eq!(ran.status.code(), Some(1), "{}", show(&ran));
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("opening the repository"),
        "{}",
        show(&ran)
    );
    let worker_labels = &spec["template"]["metadata"]["labels"];

    // The disruption budget: the workers, and fewer than all of them.
    let pdb = find(&all, "PodDisruptionBudget", "rfs-workers");
    let min = pdb["spec"]["minAvailable"].as_u64().unwrap();
    assert!(
        min < parallelism && min * 10 >= parallelism * 8,
        "minAvailable {min}"
    );
    for (k, v) in pdb["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&worker_labels[k], v, "the budget selects the workers");
    }

    // The dashboard: the same image, `rfs status --serve`, behind its Service.
    let dash = find(&all, "Deployment", "rfs-dashboard");
    let dpod = &dash["spec"]["template"];
    let dc = &dpod["spec"]["containers"][0];
    assert_eq!(dc["image"], worker["image"]);
    assert_eq!(dc["args"][0], "status");
    assert_eq!(dc["args"][1], "--serve");
    assert_eq!(secret_ref(dc, "RFS_STORE")["key"], "store");
    let known = help_env("status");
    for var in env_names(dc).iter().filter(|v| v.starts_with("RFS_")) {
        assert!(
            known.contains(var),
            "{var} is not a variable of `rfs status`"
        );
    }
    let port: u16 = dc["args"][2]
        .as_str()
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    assert_eq!(
        dc["ports"][0]["containerPort"].as_u64(),
        Some(u64::from(port))
    );
    // The dashboard as the Deployment starts it (on a free loopback port), before any worker
    // made the store: it serves, and the probes' path answers 200 without the token.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let mut c = rfs();
    c.args(["status", "--serve", &addr.to_string()]);
    with_env(&mut c, dc);
    let server = Killed(
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let probe = dc["readinessProbe"]["httpGet"]["path"].as_str().unwrap();
    let mut answer = String::new();
    common::wait_for("the dashboard", std::time::Duration::from_secs(20), || {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(addr) else {
            return false;
        };
        let asked = write!(
            s,
            "GET {probe} HTTP/1.1\r\nHost: rfs-dashboard\r\nConnection: close\r\n\r\n"
        );
        answer.clear();
        asked.is_ok() && s.read_to_string(&mut answer).is_ok()
    });
    drop(server);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let svc = find(&all, "Service", "rfs-dashboard");
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(
            &dpod["metadata"]["labels"][k], v,
            "the Service selects the dashboard"
        );
    }
    assert_eq!(
        svc["spec"]["ports"][0]["targetPort"],
        dc["ports"][0]["name"]
    );

    // The two store choices: each its own labels, its Service selecting its pod.
    for name in ["rfs-store-redis", "rfs-store-postgres"] {
        let set = find(&all, "StatefulSet", name);
        let svc = find(&all, "Service", name);
        let labels = &set["spec"]["template"]["metadata"]["labels"];
        for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
            assert_eq!(&labels[k], v, "{name}: the Service selects its server");
        }
        assert_ne!(labels, worker_labels);
    }
}
