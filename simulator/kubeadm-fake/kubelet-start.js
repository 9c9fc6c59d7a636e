/* global process, console */
/**
 * kubeadm's kubelet-start phase, for the kubeadm CONTRACT FAKE (see ./kubeadm): it writes the
 * kubelet's flags file, `/var/lib/kubelet/kubeadm-flags.env` under the node's root (the folder
 * above the config's `etc/kubernetes`), whose --hostname-override names the node, and asks systemd
 * to start kubelet.service, as `kubeadm init` and `kubeadm join` do.
 *
 * kubeadm runs `systemctl daemon-reload` and `systemctl restart kubelet`; the simulator's systemctl
 * knows `start` only, which is the same for a kubelet that is not running yet. Like kubeadm, the
 * fake only warns when the kubelet does not start, and starts none where there is no systemd to
 * ask: here, where SYSTEMCTL_FAKE_UNIT_DIR (the simulator's systemd) is not set. A real systemctl
 * on this machine is never called.
 */
import { spawnSync } from 'node:child_process'
import path from 'node:path'

/** `node-ip` from kubeletExtraArgs: a map (v1beta3) or a list of {name, value} (v1beta4). */
export function nodeIp(args) {
  if (Array.isArray(args)) return args.find((a) => a?.name === 'node-ip')?.value
  return args?.['node-ip']
}

export function startKubelet({ kubernetesDir, nodeRegistration, write }) {
  const root = path.resolve(kubernetesDir, '..', '..')
  const ip = nodeIp(nodeRegistration?.kubeletExtraArgs)
  const args = [
    '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock',
    `--hostname-override=${nodeRegistration.name}`,
    ...(ip ? [`--node-ip=${ip}`] : []),
  ]
  write(path.join(root, 'var/lib/kubelet/kubeadm-flags.env'), `KUBELET_KUBEADM_ARGS="${args.join(' ')}"\n`)
  console.log(
    '[kubelet-start] Writing kubelet environment file with flags to file "/var/lib/kubelet/kubeadm-flags.env"',
  )
  // kubeadm starts the kubelet where systemd is the init system: the simulator's systemctl (a mini
  // process node), or a real systemd (a mini VM node, whose units say so with KUBEADM_FAKE_SYSTEMD=1)
  if (!process.env.SYSTEMCTL_FAKE_UNIT_DIR && process.env.KUBEADM_FAKE_SYSTEMD !== '1') {
    console.log(
      "[kubelet-start] No supported init system detected, won't make sure the kubelet is running properly.",
    )
    return
  }
  console.log('[kubelet-start] Starting the kubelet')
  const started = spawnSync('systemctl', ['start', 'kubelet.service'], { encoding: 'utf8' })
  if (started.status !== 0) {
    const why = started.error?.message ?? (started.stderr.trim() || `exit status ${started.status}`)
    console.log(`[kubelet-start] WARNING: unable to start the kubelet service: [${why}]`)
    console.log('[kubelet-start] Please ensure kubelet is reloaded and running manually.')
  }
}
