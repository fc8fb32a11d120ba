// Validates rendered Kubernetes manifests (a multi-document YAML file, `kubectl kustomize` output)
// against the Kubernetes API schema and the Prometheus Operator's CRDs, with kubernetes-models:
//   node validate.mjs rendered.yaml
// Exits 1 naming every object that does not validate, or whose kind it does not know, and every
// rule of lanes' own it breaks (below: non-root, read-only, probes, grace period, admin port).
import fs from "node:fs";
import yaml from "js-yaml";
import { Deployment } from "kubernetes-models/apps/v1";
import { ConfigMap, Secret, Service } from "kubernetes-models/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { PodMonitor, ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

const models = {
  "apps/v1/Deployment": Deployment,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "monitoring.coreos.com/v1/PodMonitor": PodMonitor,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

const file = process.argv[2];
const docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d);
let failed = 0;
for (const doc of docs) {
  const key = `${doc.apiVersion}/${doc.kind}`;
  const name = `${doc.kind}/${doc.metadata?.name}`;
  const Model = models[key];
  if (!Model) {
    console.error(`${file}: ${name}: no schema known for ${key}`);
    failed++;
    continue;
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    console.error(`${file}: ${name}: ${e.message}`);
    failed++;
  }
}

// lanes' own rules for what the overlays render.
const problems = [];
const seconds = (d) => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(String(d ?? "0"));
  if (!m) return NaN;
  return Number(m[1]) * ({ ms: 0.001, s: 1, m: 60 }[m[2] ?? "ms"] ?? 0.001);
};
const config = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith("lanes-router-config"));
const routerConfig = config ? JSON.parse(config.data["router.json"]) : {};
for (const d of docs.filter((d) => d.kind === "Deployment")) {
  const pod = d.spec.template.spec;
  if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${d.metadata.name}: not runAsNonRoot`);
  for (const c of pod.containers) {
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${d.metadata.name}/${c.name}: privilege escalation allowed`);
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${d.metadata.name}/${c.name}: root filesystem writable`);
    if (!c.readinessProbe || !c.livenessProbe) problems.push(`${d.metadata.name}/${c.name}: no readiness or liveness probe`);
    if (!c.resources?.requests || !c.resources?.limits) problems.push(`${d.metadata.name}/${c.name}: no resource requests and limits`);
  }
  if (d.metadata.name === "lanes-router") {
    const c = pod.containers[0];
    if (c.readinessProbe?.httpGet?.path !== "/readiness") problems.push("lanes-router: readiness is not /readiness");
    if (c.livenessProbe?.httpGet?.path !== "/health") problems.push("lanes-router: liveness is not /health");
    const need = seconds(routerConfig["shutdown-delay"]) + seconds(routerConfig["shutdown-grace"]);
    if (!(pod.terminationGracePeriodSeconds >= need))
      problems.push(`lanes-router: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} < shutdown-delay + shutdown-grace (${need} s)`);
  }
}
const adminPort = Number(routerConfig["admin-port"] ?? 8090);
for (const svc of docs.filter((d) => d.kind === "Service"))
  for (const p of svc.spec.ports)
    if (p.port === adminPort || p.targetPort === adminPort) problems.push(`Service/${svc.metadata.name} exposes the admin port`);
if (!docs.some((d) => d.kind === "NetworkPolicy" && d.spec.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "lanes-replica"))
  problems.push("no NetworkPolicy in front of the replicas");
if (!docs.some((d) => d.kind === "PodDisruptionBudget")) problems.push("no PodDisruptionBudget");
for (const p of problems) console.error(`${file}: ${p}`);

console.log(`${file}: ${docs.length - failed} of ${docs.length} objects valid, ${problems.length} rule(s) broken`);
process.exit(failed || problems.length ? 1 : 0);
