import { stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { readNodeState, writeNodeState } from '../../src/lib/nodeconfig/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const SALT = Buffer.alloc(32, 7)

describe('node state (node_state.json)', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  it("round-trips with Constellation's field names plus DiskUUID, 0600", async () => {
    const paths = nodePaths(dir)
    await writeNodeState(paths, { role: 'control-plane', measurementSalt: SALT, diskUuid: 'ab-cd' })
    expect(path.basename(paths.nodeStateFile)).to.equal('node_state.json')
    expect((await stat(paths.nodeStateFile)).mode & 0o777).to.equal(0o600)
    expect(await readNodeState(paths)).to.deep.equal({
      role: 'control-plane',
      measurementSalt: SALT,
      diskUuid: 'ab-cd',
    })
  })

  it('reads a file Constellation wrote (no DiskUUID)', async () => {
    const paths = nodePaths(dir)
    await writeNodeState(paths, { role: 'worker', measurementSalt: SALT })
    await writeFile(
      paths.nodeStateFile,
      JSON.stringify({ Role: 'Worker', MeasurementSalt: SALT.toString('base64') }),
    )
    expect(await readNodeState(paths)).to.deep.equal({
      role: 'worker',
      measurementSalt: SALT,
      diskUuid: undefined,
    })
  })

  const bad: Record<string, { text?: string; want: RegExp }> = {
    missing: { want: /node state .*node_state\.json does not exist/ },
    'not JSON': { text: '{', want: /node_state\.json: not JSON/ },
    'an unknown role': {
      text: JSON.stringify({ Role: 'Admin', MeasurementSalt: SALT.toString('base64') }),
      want: /Role: "Admin" is not ControlPlane or Worker/,
    },
    'a short salt': {
      text: JSON.stringify({ Role: 'Worker', MeasurementSalt: 'AAAA' }),
      want: /MeasurementSalt: want 32 bytes/,
    },
    'a DiskUUID that is no string': {
      text: JSON.stringify({ Role: 'Worker', MeasurementSalt: SALT.toString('base64'), DiskUUID: 7 }),
      want: /DiskUUID: not a string/,
    },
  }
  for (const [name, tc] of Object.entries(bad))
    it(`refuses ${name}, naming the file and field`, async () => {
      const paths = nodePaths(dir)
      if (tc.text !== undefined) {
        await writeNodeState(paths, { role: 'worker', measurementSalt: SALT })
        await writeFile(paths.nodeStateFile, tc.text)
      }
      await expect(readNodeState(paths)).to.be.rejectedWith(tc.want)
    })
})
