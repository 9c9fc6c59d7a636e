/**
 * The local node harness stops `bootstrap run` as systemd stops its unit: every process of it, not
 * only the main one. A kubeadm left running after its test wrote into a node root the test had
 * already removed, and the temp dir came back as a stray.
 */
import { expect } from './chai.js'
import { spawnCli } from './cli.js'
import { startDaemonProcess, startLocalNode, type LocalNode } from './local-node.js'
import { processesMentioning } from './processes.js'

describe('local node harness: a stopped bootstrapper leaves nothing running (kubeadm fake, real CLI)', function () {
  this.timeout(120_000)
  let node: LocalNode
  beforeEach(async () => (node = await startLocalNode()))
  afterEach(() => node.stop())

  it("stopped while kubeadm runs: kubeadm stops with it, as in the unit's control group", async () => {
    const hold = await node.holdKubeadm()
    const daemon = await startDaemonProcess(node)
    const init = spawnCli(['init', '--skip-helm', '-C', node.workspace])
    try {
      await Promise.race([hold.reached(), init.result])
      expect(await processesMentioning(node.root), 'kubeadm runs under the node root').not.to.be.empty
      await daemon.stop()
      expect(await processesMentioning(node.root)).to.deep.equal([])
    } finally {
      init.child.kill('SIGKILL')
      await init.result
      await hold.release()
    }
  })
})
