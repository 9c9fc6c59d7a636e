/** The files a cloud-config or Ignition document writes, read as the node reads them. */
import { parse } from 'yaml'
import { NODE_CONFIG_PATH } from '../../src/lib/paths.js'

/** path → content of every file the document writes (Ignition data URLs decoded). */
export function nodeFiles(document: string): Map<string, string> {
  if (document.startsWith('{')) {
    const config = JSON.parse(document) as {
      storage: { files: Array<{ path: string; contents?: { source: string } }> }
    }
    return new Map(config.storage.files.map((f) => [f.path, decodeDataUrl(f.contents?.source ?? 'data:,')]))
  }
  const config = parse(document) as { write_files: Array<{ path: string; content: string }> }
  return new Map(config.write_files.map((f) => [f.path, f.content]))
}

/** The content of NODE_CONFIG_PATH in a document ('' when it writes none). */
export const installedNodeConfig = (document: string): string =>
  nodeFiles(document).get(NODE_CONFIG_PATH) ?? ''

function decodeDataUrl(url: string): string {
  const [meta = '', data = ''] = url.slice('data:'.length).split(',', 2)
  return meta.endsWith(';base64') ? Buffer.from(data, 'base64').toString() : decodeURIComponent(data)
}
