/**
 * The API contract fake's storage layout is spelled once, in simulator/api-layout.js: the fake's
 * DirStore, the kubeadm contract fake and the tests' FakeKubeApiDir all read and write the same
 * directory through it, so a second spelling could drift from it unnoticed (the kubeadm fake would
 * look for a Secret where the API fake never put it). This check fails on a file of theirs that
 * builds such a path itself: a literal starting `namespaces/`, or a file name `${…}.json`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'

const ROOT = path.resolve(import.meta.dirname, '../..')
const LAYOUT = path.join(ROOT, 'simulator', 'api-layout.js')
/** The folders whose code reads or writes the API fake's directory. */
const USERS = ['simulator', 'src/lib/simulator', 'test/support']
const SPELLS_LAYOUT = /['"`]namespaces\/|\$\{[^}]+\}\.json`/

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return files(full)
    // the fakes are .js modules and extensionless executables (kubeadm, systemctl, kubelet)
    return /\.(ts|js|mjs|cjs)$|^[^.]+$/.test(e.name) ? [full] : []
  })
}

describe('architecture: one storage layout for the API contract fake', () => {
  it('only simulator/api-layout.js spells where an object lives in the API fake’s directory', () => {
    const spelled = USERS.flatMap((dir) => files(path.join(ROOT, dir)))
      .filter((f) => f !== LAYOUT)
      .flatMap((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${path.relative(ROOT, f)}:${i + 1}` }))
          .filter(({ line }) => SPELLS_LAYOUT.test(line))
          .map(({ line, at }) => `${at}: ${line.trim()}`),
      )
    expect(spelled).to.deep.equal([])
  })
})
