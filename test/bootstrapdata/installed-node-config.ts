/** The node config an attested bootstrap-data document installs, read as the node reads its files. */
import { parse } from 'yaml'
import { NODE_CONFIG_PATH } from '../../src/lib/paths.js'

/** The content of NODE_CONFIG_PATH in a cloud-config or Ignition document ('' when it writes none). */
export function installedNodeConfig(document: string): string {
  if (document.startsWith('{')) {
    const config = JSON.parse(document) as {
      storage: { files: Array<{ path: string; contents?: { source: string } }> }
    }
    const source = config.storage.files.find((f) => f.path === NODE_CONFIG_PATH)?.contents?.source ?? ''
    const [meta = '', data = ''] = source.slice('data:'.length).split(',', 2)
    return meta.endsWith(';base64') ? Buffer.from(data, 'base64').toString() : decodeURIComponent(data)
  }
  const config = parse(document) as { write_files: Array<{ path: string; content: string }> }
  return config.write_files.find((f) => f.path === NODE_CONFIG_PATH)?.content ?? ''
}
