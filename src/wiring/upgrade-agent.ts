/**
 * `upgrade-agent` with its production parts: this node's name from the metadata, its own Node
 * object through the kubeconfig kubeadm left (admin.conf on a control plane, else kubelet.conf),
 * the node's installer (node:http(s) downloads), kubeadm and systemctl through the process runner.
 */
import { existsSync } from 'node:fs'
import { stageComponents, upgradeNode, UpgradeAgent } from '../lib/bootstrapper/index.js'
import { openNodeAnnotations } from '../lib/kube/index.js'
import { kubernetesNodeName, loadResolvedNodeConfig } from '../lib/nodeconfig/index.js'
import { nodePaths } from '../lib/paths.js'
import { createLogger, createRunner, httpGet, serveUntilStopped, sleepMs } from '../lib/system/index.js'

export async function runUpgradeAgent(configPath: string): Promise<void> {
  const config = await loadResolvedNodeConfig(configPath, { require: ['metadata'] })
  const log = createLogger({ format: 'json' }).child('upgrade-agent')
  const paths = nodePaths(config.root)
  const self = config.metadata?.self
  if (!self) throw new Error(`${configPath}: the upgrade agent needs the node's own name from its metadata`)
  const runner = createRunner()
  const agent = new UpgradeAgent({
    node: kubernetesNodeName(self.name),
    annotations: () => openNodeAnnotations(existsSync(paths.adminConf) ? paths.adminConf : paths.kubeletConf),
    upgrade: (req) =>
      upgradeNode(req, {
        paths,
        kubeadm: config.kubeadm,
        runner,
        stage: (components) =>
          stageComponents(components, {
            root: config.root,
            stagingDir: paths.componentStagingDir,
            get: httpGet,
            log: log.child('installer'),
          }),
        log,
      }),
    log,
    clock: () => new Date(),
    sleep: sleepMs,
  })
  await serveUntilStopped(agent)
}
