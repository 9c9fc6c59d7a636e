/* global process, console */
/**
 * FakeKubeadm's `upgrade plan`, `upgrade apply` and `upgrade node` — part of the kubeadm CONTRACT
 * FAKE (see ./kubeadm), held to kubeadm's documentation (kubeadm upgrade, kubeadm upgrade apply,
 * kubeadm upgrade node, kubeadm upgrade plan; no real kubeadm runs here):
 *
 *   upgrade plan [VERSION]   control planes only (admin.conf); checks the version policy, prints the
 *                            plan, changes nothing
 *   upgrade apply VERSION    the first control plane: preflight (admin.conf, the kubeadm-config
 *                            ConfigMap, every control plane Ready, this node's static pods), the
 *                            version policy, a confirmation (--yes or --force skip it; no answer on
 *                            stdin is a refusal); then the static pods at VERSION (the --patches
 *                            directory's `<component>+json.json` applied), the ClusterConfiguration
 *                            in kube-system/kubeadm-config and the kubelet's configuration in
 *                            kube-system/kubelet-config uploaded, this node's /var/lib/kubelet/config.yaml
 *   upgrade node             every other node: a control plane's static pods at the cluster's version
 *                            (kubeadm-config), then the kubelet's configuration from kubelet-config
 *
 * The version policy, as kubeadm enforces it: no minor skipped, no minor downgrade, a target no
 * newer than this kubeadm (same minor, newer patch: only with --force), a patch downgrade only with
 * --force. The node's folders are found from --kubeconfig (default /etc/kubernetes/admin.conf;
 * `upgrade node` on a worker falls back to kubelet.conf beside it, as kubeadm does).
 *
 * Every upgrade call is appended to KUBEADM_FAKE_LOG (one JSON line: time, command, node, target,
 * this kubeadm's version, outcome) so tests can check the order across nodes.
 */
import { appendFileSync, cpSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { objectFile, resourceDir } from '../api-layout.js'

const BOOL = 'bool'
const STRING = 'string'
/** Flags per command, as `kubeadm upgrade <cmd> --help` lists them (global: --rootfs, -v). */
const FLAGS = {
  plan: {
    'allow-experimental-upgrades': BOOL,
    'allow-release-candidate-upgrades': BOOL,
    config: STRING,
    'feature-gates': STRING,
    'ignore-preflight-errors': STRING,
    kubeconfig: STRING,
    output: STRING,
    'print-config': BOOL,
    'show-managed-fields': BOOL,
  },
  apply: {
    'allow-experimental-upgrades': BOOL,
    'allow-release-candidate-upgrades': BOOL,
    'certificate-renewal': BOOL,
    config: STRING,
    'dry-run': BOOL,
    'etcd-upgrade': BOOL,
    'feature-gates': STRING,
    force: BOOL,
    'ignore-preflight-errors': STRING,
    kubeconfig: STRING,
    patches: STRING,
    'print-config': BOOL,
    yes: BOOL,
  },
  node: {
    'certificate-renewal': BOOL,
    config: STRING,
    'dry-run': BOOL,
    'etcd-upgrade': BOOL,
    'ignore-preflight-errors': STRING,
    kubeconfig: STRING,
    patches: STRING,
    'skip-phases': STRING,
  },
}
const SHORT = { f: 'force', y: 'yes', o: 'output' }
const GLOBAL = { rootfs: STRING, v: STRING }
/** Flags a --config file has a field for: kubeadm refuses them beside --config. */
const CONFIG_FIELDS = [
  'allow-experimental-upgrades',
  'allow-release-candidate-upgrades',
  'certificate-renewal',
  'etcd-upgrade',
  'force',
  'patches',
  'skip-phases',
]
const NODE_PHASES = [
  'preflight',
  'control-plane',
  'kubelet-config',
  'addon',
  'addon/coredns',
  'addon/kube-proxy',
  'post-upgrade',
]
const CONTROL_PLANE_PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']
const VERSION = /^v(\d+)\.(\d+)\.(\d+)$/

/** `kubeadm upgrade ...`: `args` after "upgrade"; `version` is this kubeadm's own. */
export function runUpgrade(args, { version, die, write }) {
  const [sub, ...rest] = args
  if (!FLAGS[sub])
    die(
      sub === undefined || sub.startsWith('-')
        ? 'kubeadm upgrade: missing subcommand (apply, diff, node, plan)'
        : `unknown command "${sub}" for "kubeadm upgrade"`,
    )
  const { words, flags } = parseFlags(rest, FLAGS[sub], logged(sub, {}, version, die))
  const ctx = { sub, flags, version, die: logged(sub, flags, version, die), write }
  if (sub === 'plan') return plan(words, ctx)
  if (sub === 'apply') return apply(words, ctx)
  if (words.length > 0) ctx.die(`unknown command "${words[0]}" for "kubeadm upgrade node"`)
  return node(ctx)
}

/** pflag's rules: `--f v`/`--f=v` for strings; `--b`/`--b=true|false` for booleans (`--b false` is a word). */
function parseFlags(args, known, die) {
  const words = []
  const flags = {}
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (!a.startsWith('-') || a === '-') {
      words.push(a)
      continue
    }
    const long = a.startsWith('--')
    const body = a.slice(long ? 2 : 1)
    const eq = body.indexOf('=')
    let name = eq >= 0 ? body.slice(0, eq) : body
    if (!long) {
      if (name === 'v') {
        flags.v = eq >= 0 ? body.slice(eq + 1) : args[++i]
        continue
      }
      if (!SHORT[name] || !known[SHORT[name]]) die(`unknown shorthand flag: '${name[0]}' in ${a}`)
      name = SHORT[name]
    }
    const kind = known[name] ?? GLOBAL[name]
    if (!kind) die(`unknown flag: --${name}`)
    if (kind === BOOL) {
      const value = eq >= 0 ? body.slice(eq + 1) : 'true'
      if (value !== 'true' && value !== 'false')
        die(
          `invalid argument "${value}" for "--${name}" flag: strconv.ParseBool: parsing "${value}": invalid syntax`,
        )
      flags[name] = value === 'true'
    } else if (eq >= 0) flags[name] = body.slice(eq + 1)
    else if (i + 1 < args.length) flags[name] = args[++i]
    else die(`flag needs an argument: --${name}`)
  }
  return { words, flags }
}

/** die(), after a line in KUBEADM_FAKE_LOG; `done` writes the success line. */
function logged(sub, flags, version, die) {
  const fail = (message) => {
    record({
      command: `upgrade ${sub}`,
      flags,
      kubeadmVersion: version,
      ok: false,
      error: message.split('\n')[0],
    })
    die(message)
  }
  fail.done = (extra) =>
    record({ command: `upgrade ${sub}`, flags, kubeadmVersion: version, ok: true, ...extra })
  return fail
}

function record(entry) {
  const file = process.env.KUBEADM_FAKE_LOG
  if (!file) return
  const { flags, ...rest } = entry
  const line = { at: new Date().toISOString(), ...rest, node: record.node, dryRun: flags['dry-run'] === true }
  appendFileSync(file, JSON.stringify(line) + '\n')
}

/** The node's folders from --kubeconfig; `fallback` lets a worker use kubelet.conf. */
function nodeFiles(flags, die, { fallback = false } = {}) {
  let kubeconfig = flags.kubeconfig ?? path.join(flags.rootfs ?? '/', 'etc/kubernetes/admin.conf')
  if (!existsSync(kubeconfig) && fallback && flags.kubeconfig === undefined)
    kubeconfig = path.join(path.dirname(kubeconfig), 'kubelet.conf')
  if (!existsSync(kubeconfig))
    die(
      `couldn't create a Kubernetes client from file "${kubeconfig}": failed to load admin kubeconfig: open ${kubeconfig}: no such file or directory\nTo see the stack trace of this error execute with --v=5 or higher`,
    )
  const kubernetesDir = path.dirname(kubeconfig)
  const root = path.resolve(kubernetesDir, '..', '..')
  const files = {
    kubeconfig,
    kubernetesDir,
    manifests: path.join(kubernetesDir, 'manifests'),
    kubeletConfig: path.join(root, 'var/lib/kubelet/config.yaml'),
    flagsEnv: path.join(root, 'var/lib/kubelet/kubeadm-flags.env'),
  }
  record.node = nodeName(files)
  return files
}

function nodeName(files) {
  try {
    return /--hostname-override=([^\s"]+)/.exec(readFileSync(files.flagsEnv, 'utf8'))?.[1]
  } catch {
    return undefined
  }
}

function apiDir(die) {
  const dir = process.env.KUBEADM_FAKE_API_DIR
  if (!dir)
    die(
      '[upgrade/init config] FATAL: failed to get config map: Get "https://control-plane:6443/api/v1/namespaces/kube-system/configmaps/kubeadm-config": connection refused (fake: KUBEADM_FAKE_API_DIR is not set)',
    )
  return dir
}

const configMapFile = (dir, name) =>
  objectFile(dir, { resource: 'configmaps', namespace: 'kube-system', name })

function readConfigMap(dir, name) {
  try {
    return JSON.parse(readFileSync(configMapFile(dir, name), 'utf8'))
  } catch {
    return undefined
  }
}

/** The ClusterConfiguration kubeadm init uploaded (kube-system/kubeadm-config). */
function clusterConfiguration(dir, die) {
  const cm = readConfigMap(dir, 'kubeadm-config')
  if (!cm?.data?.ClusterConfiguration)
    die(
      '[upgrade/init config] FATAL: failed to get config map: configmaps "kubeadm-config" not found\nTo see the stack trace of this error execute with --v=5 or higher',
    )
  const cluster = parse(cm.data.ClusterConfiguration)
  if (!VERSION.test(cluster?.kubernetesVersion ?? ''))
    die(
      `[upgrade/init config] FATAL: the ClusterConfiguration's kubernetesVersion "${cluster?.kubernetesVersion}" is not a version`,
    )
  return { cm, cluster }
}

const parts = (v) => VERSION.exec(v).slice(1).map(Number)

/**
 * kubeadm's version policy for target `to` in a cluster at `from`, with kubeadm `kubeadm`:
 * mandatory refusals, and skippable ones (--force).
 */
function versionPolicy(to, from, kubeadm) {
  const mandatory = []
  const skippable = []
  const [, tMinor, tPatch] = parts(to)
  const [, cMinor, cPatch] = parts(from)
  const [, kMinor, kPatch] = parts(kubeadm)
  if (tMinor < cMinor)
    mandatory.push(
      `Specified version to upgrade to "${to}" is a downgrade of the cluster's minor release ("${from}"); downgrading a minor release is not supported`,
    )
  else if (tMinor === cMinor && tPatch < cPatch)
    skippable.push(
      `Specified version to upgrade to "${to}" is lower than the cluster version "${from}"; only --force downgrades a patch release`,
    )
  if (tMinor > cMinor + 1)
    mandatory.push(
      `Specified version to upgrade to "${to}" is too high; kubeadm can upgrade only 1 minor version at a time (the cluster is at "${from}")`,
    )
  if (tMinor > kMinor)
    mandatory.push(
      `Specified version to upgrade to "${to}" is at least one minor release higher than the kubeadm minor release (${tMinor} > ${kMinor}). Such an upgrade is not supported`,
    )
  else if (tMinor === kMinor && tPatch > kPatch)
    skippable.push(
      `Specified version to upgrade to "${to}" is higher than the kubeadm version "${kubeadm}". Upgrade kubeadm first using the tool you used to install kubeadm`,
    )
  else if (kMinor > tMinor)
    skippable.push(
      `Kubeadm version "${kubeadm}" can only be used to upgrade to Kubernetes version "v1.${kMinor}"`,
    )
  return { mandatory, skippable }
}

function enforcePolicy(to, from, ctx, force) {
  const { mandatory, skippable } = versionPolicy(to, from, ctx.version)
  const errors = force ? mandatory : [...mandatory, ...skippable]
  for (const s of force ? skippable : [])
    console.log(`[upgrade/version] Found 1 potential version compatibility error: ${s} (--force)`)
  if (errors.length)
    ctx.die(
      `[upgrade/version] FATAL: the --version argument is invalid due to these ${mandatory.length ? 'fatal ' : ''}errors:\n\n${errors.map((e) => `\t- ${e}`).join('\n')}\n${mandatory.length ? '' : '\nCan be bypassed if you pass the --force flag'}`,
    )
}

/** The --config file: an UpgradeConfiguration (v1beta4); other kubeadm kinds are ignored with a warning. */
function upgradeConfiguration(ctx) {
  const file = ctx.flags.config
  if (file === undefined) return undefined
  const mixed = Object.keys(ctx.flags).filter((f) => CONFIG_FIELDS.includes(f))
  if (mixed.length) ctx.die(`can not mix '--config' with arguments [${mixed.join(' ')}]`)
  if (!existsSync(file))
    ctx.die(`unable to read config from "${file}": open ${file}: no such file or directory`)
  let found
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    if (doc.errors.length) ctx.die(`error unmarshaling YAML: ${doc.errors[0].message}`)
    const obj = doc.toJS()
    if (!obj?.kind || !obj?.apiVersion)
      ctx.die('invalid configuration: every document needs kind and apiVersion')
    if (obj.kind === 'UpgradeConfiguration') {
      if (obj.apiVersion !== 'kubeadm.k8s.io/v1beta4')
        ctx.die(`no kind "UpgradeConfiguration" is registered for version "${obj.apiVersion}"`)
      found = obj
    } else if (
      [
        'InitConfiguration',
        'ClusterConfiguration',
        'JoinConfiguration',
        'KubeletConfiguration',
        'KubeProxyConfiguration',
      ].includes(obj.kind)
    )
      console.error(
        `[config] WARNING: Ignored configuration document with GroupVersionKind ${obj.apiVersion}, Kind=${obj.kind}`,
      )
    else ctx.die(`no kind "${obj.kind}" is registered for the kubeadm config`)
  }
  if (!found) ctx.die(`invalid configuration: no UpgradeConfiguration in ${file}`)
  for (const key of Object.keys(found))
    if (!['apiVersion', 'kind', 'apply', 'node', 'plan', 'diff', 'timeouts'].includes(key))
      ctx.die(`error unmarshaling JSON: while decoding JSON: json: unknown field "${key}"`)
  return found
}

function plan(words, ctx) {
  if (words.length > 1) ctx.die(`unknown command "${words[1]}" for "kubeadm upgrade plan"`)
  const files = nodeFiles(ctx.flags, ctx.die)
  const config = upgradeConfiguration(ctx)
  const dir = apiDir(ctx.die)
  const { cluster } = clusterConfiguration(dir, ctx.die)
  const to = words[0] ?? config?.plan?.kubernetesVersion ?? ctx.version
  if (!VERSION.test(to))
    ctx.die(`[upgrade/versions] FATAL: couldn't parse version "${to}": want vMAJOR.MINOR.PATCH`)
  failIf('upgrade-plan', ctx, 'the cluster is not healthy')
  console.log('[preflight] Running pre-flight checks.')
  console.log(
    '[upgrade/config] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...',
  )
  console.log(`[upgrade] Running cluster health checks`)
  preflight(files, dir, ctx)
  enforcePolicy(to, cluster.kubernetesVersion, ctx, false)
  console.log(`[upgrade/versions] Cluster version: ${cluster.kubernetesVersion}`)
  console.log(`[upgrade/versions] kubeadm version: ${ctx.version}`)
  console.log(`[upgrade/versions] Target version: ${to}\n`)
  console.log('COMPONENT                 NODE      CURRENT    TARGET')
  for (const c of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy'])
    console.log(
      `${c.padEnd(25)} ${(record.node ?? '').padEnd(9)} ${cluster.kubernetesVersion.padEnd(10)} ${to}`,
    )
  console.log(
    `\nYou can now apply the upgrade by executing the following command:\n\n\tkubeadm upgrade apply ${to}\n`,
  )
  ctx.die.done({ target: to, cluster: cluster.kubernetesVersion })
}

function apply(words, ctx) {
  const files = nodeFiles(ctx.flags, ctx.die)
  const config = upgradeConfiguration(ctx)
  if (words.length > 1) ctx.die(`unknown command "${words[1]}" for "kubeadm upgrade apply"`)
  const to = words[0] ?? config?.apply?.kubernetesVersion
  if (to === undefined)
    ctx.die('[upgrade/version] FATAL: missing one or more required arguments. Required arguments: [version]')
  if (!VERSION.test(to))
    ctx.die(`[upgrade/version] FATAL: couldn't parse version "${to}": want vMAJOR.MINOR.PATCH`)
  const force = ctx.flags.force ?? config?.apply?.forceUpgrade ?? false
  const dryRun = ctx.flags['dry-run'] ?? config?.apply?.dryRun ?? false
  const patches = ctx.flags.patches ?? config?.apply?.patches?.directory
  const renew = ctx.flags['certificate-renewal'] ?? config?.apply?.certificateRenewal ?? true
  const dir = apiDir(ctx.die)
  const { cm, cluster } = clusterConfiguration(dir, ctx.die)
  console.log(
    '[upgrade] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...',
  )
  console.log('[preflight] Running pre-flight checks.')
  preflight(files, dir, ctx)
  failIf(
    'upgrade-preflight',
    ctx,
    '[preflight] Some fatal errors occurred:\n\t[ERROR CreateJob]: Job "upgrade-health-check" in the namespace "kube-system" did not complete in 15s',
  )
  console.log(`[upgrade/version] You have chosen to upgrade to version "${to}"`)
  enforcePolicy(to, cluster.kubernetesVersion, ctx, force)
  if (!(ctx.flags.yes || force || dryRun)) confirm(ctx)
  if (dryRun) {
    console.log(
      `[dryrun] Would upgrade the static Pods of this node and the cluster's configuration to "${to}"`,
    )
    return ctx.die.done({ target: to, cluster: cluster.kubernetesVersion })
  }
  const patchList = readPatches(patches, ctx)
  failIf(
    'upgrade-apply',
    ctx,
    "[upgrade/apply] FATAL: couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. Errors faced: timed out waiting for the condition",
  )
  upgradeStaticPods(files, to, patchList, ctx, renew)
  const from = cluster.kubernetesVersion
  cluster.kubernetesVersion = to
  write(
    configMapFile(dir, 'kubeadm-config'),
    { ...cm, data: { ...cm.data, ClusterConfiguration: stringify(cluster) } },
    ctx,
  )
  console.log(
    '[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace',
  )
  const kubelet = uploadKubeletConfig(dir, ctx)
  writeKubeletConfig(files, kubelet, ctx)
  console.log(`\n[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "${to}".`)
  console.log(
    '[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.',
  )
  ctx.die.done({ target: to, cluster: from })
}

function node(ctx) {
  const files = nodeFiles(ctx.flags, ctx.die, { fallback: true })
  const config = upgradeConfiguration(ctx)
  const skipped = (ctx.flags['skip-phases'] ?? '').split(',').filter(Boolean)
  for (const p of skipped) if (!NODE_PHASES.includes(p)) ctx.die(`invalid phase name: ${p}`)
  const dryRun = ctx.flags['dry-run'] ?? config?.node?.dryRun ?? false
  const patches = ctx.flags.patches ?? config?.node?.patches?.directory
  const renew = ctx.flags['certificate-renewal'] ?? config?.node?.certificateRenewal ?? true
  const dir = apiDir(ctx.die)
  const { cluster } = clusterConfiguration(dir, ctx.die)
  const to = cluster.kubernetesVersion
  const controlPlane = existsSync(path.join(files.manifests, 'kube-apiserver.yaml'))
  console.log(
    '[upgrade] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...',
  )
  if (!skipped.includes('preflight')) {
    console.log('[preflight] Running pre-flight checks')
    failIf('upgrade-preflight', ctx, '[preflight] Some fatal errors occurred')
  }
  const [, cMinor] = parts(to)
  const [, kMinor] = parts(ctx.version)
  if (cMinor > kMinor)
    ctx.die(
      `[upgrade] FATAL: the cluster is at "${to}", newer than this kubeadm "${ctx.version}": upgrade kubeadm on this node first`,
    )
  if (dryRun) {
    console.log(`[dryrun] Would upgrade this node to "${to}"`)
    return ctx.die.done({ target: to, controlPlane })
  }
  failIf(
    'upgrade-node',
    ctx,
    "[upgrade] FATAL: couldn't upgrade the node: timed out waiting for the condition",
  )
  if (controlPlane && !skipped.includes('control-plane'))
    upgradeStaticPods(files, to, readPatches(patches, ctx), ctx, renew)
  else console.log('[upgrade] Skipping phase. Not a control plane node.')
  if (!skipped.includes('kubelet-config')) {
    const cm = readConfigMap(dir, 'kubelet-config')
    if (!cm?.data?.kubelet)
      ctx.die(
        'error execution phase kubelet-config: configmaps "kubelet-config" not found\nTo see the stack trace of this error execute with --v=5 or higher',
      )
    writeKubeletConfig(files, cm.data.kubelet, ctx)
  }
  console.log('[upgrade] The configuration for this node was successfully upgraded!')
  console.log('[upgrade] Now you should go ahead and upgrade the kubelet package using your package manager.')
  ctx.die.done({ target: to, controlPlane })
}

function failIf(phase, ctx, message) {
  if (process.env.KUBEADM_FAKE_FAIL === phase)
    ctx.die(`${message}\nTo see the stack trace of this error execute with --v=5 or higher`)
}

/** kubeadm's upgrade health checks that the fake can see: control planes Ready, this node's static pods. */
function preflight(files, dir, ctx) {
  const ignore = (ctx.flags['ignore-preflight-errors'] ?? '').split(',').map((s) => s.trim().toLowerCase())
  const errors = []
  const notReady = []
  const nodesDir = resourceDir(dir, { resource: 'nodes' })
  for (const f of existsSync(nodesDir) ? readdirSync(nodesDir) : []) {
    let n
    try {
      n = JSON.parse(readFileSync(path.join(nodesDir, f), 'utf8'))
    } catch {
      continue
    }
    if (!('node-role.kubernetes.io/control-plane' in (n.metadata?.labels ?? {}))) continue
    const ready = (n.status?.conditions ?? []).find((c) => c.type === 'Ready')
    if (ready?.status !== 'True') notReady.push(n.metadata.name)
  }
  if (notReady.length)
    errors.push([
      'ControlPlaneNodesReady',
      `there are NotReady control-planes in the cluster: [${notReady.join(' ')}]`,
    ])
  const missing = CONTROL_PLANE_PODS.filter((c) => !existsSync(path.join(files.manifests, `${c}.yaml`)))
  if (missing.length)
    errors.push([
      'StaticPodManifest',
      `the manifest for component ${missing[0]} is missing: ${path.join(files.manifests, `${missing[0]}.yaml`)}`,
    ])
  const fatal = errors.filter(([name]) => !ignore.includes('all') && !ignore.includes(name.toLowerCase()))
  for (const [name, message] of errors.filter((e) => !fatal.includes(e)))
    console.log(`\t[WARNING ${name}]: ${message}`)
  if (fatal.length)
    ctx.die(
      `[preflight] Some fatal errors occurred:\n${fatal.map(([name, m]) => `\t[ERROR ${name}]: ${m}`).join('\n')}\n[preflight] If you know what you are doing, you can make a check non-fatal with \`--ignore-preflight-errors=...\``,
    )
}

function confirm(ctx) {
  process.stdout.write('[upgrade] Are you sure you want to proceed? [y/N]: ')
  let answer
  try {
    answer = readFileSync(0, 'utf8').split('\n')[0].trim().toLowerCase()
  } catch {
    answer = '' // no stdin at all: no answer
  }
  if (answer !== 'y' && answer !== 'yes')
    ctx.die("\n[upgrade/confirm] FATAL: won't proceed; the user didn't answer (Y|n) in order to continue")
}

/** `<component>[suffix]+json.json` files of a --patches directory (JSON patches; the only type we use). */
function readPatches(dir, ctx) {
  if (dir === undefined) return {}
  if (!existsSync(dir))
    ctx.die(`could not list patch files for path "${dir}": open ${dir}: no such file or directory`)
  const byTarget = {}
  for (const f of readdirSync(dir).sort()) {
    const m =
      /^(kube-apiserver|kube-controller-manager|kube-scheduler|etcd|kubeletconfiguration|corednsdeployment)[^+.]*(?:\+(json|merge|strategic))?\.(json|yaml)$/.exec(
        f,
      )
    if (!m) {
      console.log(`[patches] Ignored patch file "${f}": its name is not target[suffix][+patchtype].extension`)
      continue
    }
    if ((m[2] ?? 'strategic') !== 'json')
      ctx.die(`${path.join(dir, f)}: the kubeadm fake applies JSON patches only`)
    let ops
    try {
      ops = JSON.parse(readFileSync(path.join(dir, f), 'utf8'))
    } catch (err) {
      ctx.die(`could not parse patch file "${path.join(dir, f)}": ${err.message}`)
    }
    ;(byTarget[m[1]] ??= []).push(...ops)
  }
  return byTarget
}

/** A JSON patch's replace/add ops on /a/b/0/c paths. */
function applyPatch(doc, ops, where, ctx) {
  for (const op of ops) {
    if (op.op !== 'replace' && op.op !== 'add')
      ctx.die(`${where}: the kubeadm fake applies replace and add only, not ${op.op}`)
    const keys = op.path.split('/').slice(1)
    let at = doc
    for (const k of keys.slice(0, -1)) {
      at = at?.[k]
      if (at === undefined) ctx.die(`${where}: patch path ${op.path} does not exist`)
    }
    at[keys.at(-1)] = op.value
  }
}

/** The control-plane phase: backs up the manifests, then writes each one at `to` (patched). */
function upgradeStaticPods(files, to, patchList, ctx, renew) {
  const backup = path.join(
    files.kubernetesDir,
    'tmp',
    `kubeadm-backup-manifests-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  )
  cpSync(files.manifests, backup, { recursive: true })
  console.log(
    `[upgrade/staticpods] Moving new manifests to "${files.manifests}" and backing up old manifests to "${backup}"`,
  )
  for (const c of CONTROL_PLANE_PODS) {
    const file = path.join(files.manifests, `${c}.yaml`)
    const pod = parse(readFileSync(file, 'utf8'))
    pod.spec ??= {}
    pod.spec.containers = [
      {
        ...(pod.spec.containers?.[0] ?? { name: c }),
        name: c,
        image: `registry.k8s.io/${c}:${c === 'etcd' ? '3.5.21-0' : to}`,
      },
    ]
    if (patchList[c]) applyPatch(pod, patchList[c], `patch for ${c}`, ctx)
    ctx.write(file, stringify(pod))
    if (renew && c !== 'etcd') console.log(`[upgrade/staticpods] Renewing ${c} certificate`)
    console.log(`[upgrade/staticpods] Component "${c}" upgraded successfully!`)
  }
}

const DEFAULT_KUBELET_CONFIG = {
  apiVersion: 'kubelet.config.k8s.io/v1beta1',
  kind: 'KubeletConfiguration',
  cgroupDriver: 'systemd',
  staticPodPath: '/etc/kubernetes/manifests',
}

/** upload-config/kubelet: kube-system/kubelet-config, from what is there or kubeadm's defaults. */
function uploadKubeletConfig(dir, ctx) {
  const kubelet = readConfigMap(dir, 'kubelet-config')?.data?.kubelet ?? stringify(DEFAULT_KUBELET_CONFIG)
  write(
    configMapFile(dir, 'kubelet-config'),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'kubelet-config', namespace: 'kube-system' },
      data: { kubelet },
    },
    ctx,
  )
  console.log(
    '[upload-config] Storing the configuration used in ConfigMap "kubelet-config" in the "kube-system" Namespace',
  )
  return kubelet
}

function writeKubeletConfig(files, kubelet, ctx) {
  ctx.write(files.kubeletConfig, kubelet, 0o644)
  console.log(
    `[upgrade] Backing up kubelet config file to ${path.dirname(files.kubeletConfig)}/config.yaml.bak`,
  )
  console.log(`[kubelet-start] Writing kubelet configuration to file "${files.kubeletConfig}"`)
}

function write(file, obj, ctx) {
  ctx.write(file, JSON.stringify(obj) + '\n', 0o644)
}

/** kube-system/kubelet-config as `kubeadm init` uploads it (its upload-config/kubelet phase). */
export function kubeletConfigMap(kubeletConfiguration) {
  return (
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'kubelet-config', namespace: 'kube-system' },
      data: { kubelet: stringify(kubeletConfiguration) },
    }) + '\n'
  )
}
