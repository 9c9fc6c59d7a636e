/**
 * Watch streams of the FakeApiServer TEST DOUBLE, as the real API server's watch cache serves them:
 * a chunked `application/json` response, one `{"type":…,"object":…}` event per line. Every write
 * the fake stores is recorded here with its resourceVersion in a bounded history, so a watch can
 * start at any resourceVersion still held; an older one gets an ERROR event carrying a 410 Expired
 * Status (what the real cacher sends, and what makes client-go's reflectors relist).
 */
import type http from 'node:http'
import type { KubeObject } from './fake-apiserver.js'
import type { Matcher } from './fake-apiserver-selectors.js'

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED'

/** One stored change: the object after it (before it for DELETED) and, for MODIFIED, before it. */
export interface WatchEvent {
  rv: number
  type: EventType
  /** `apiVersion|resource`: which collection changed. */
  collection: string
  object: KubeObject
  previous?: KubeObject
}

export interface WatchRequest {
  collection: string
  namespace?: string
  matches: Matcher
  /** The resourceVersion asked for; undefined or 0 means "the current state first, then changes". */
  resourceVersion?: number
  sendInitialEvents?: boolean
  allowWatchBookmarks: boolean
  timeoutSeconds?: number
  /** The objects matching now (for the initial ADDED events). */
  current: () => KubeObject[]
  /** The server's newest resourceVersion (for bookmarks). */
  currentRv: () => number
  /** For BOOKMARK objects, which carry only kind, apiVersion and resourceVersion. */
  kind: string
  apiVersion: string
  /** What an event carries for an object (a Table of its one row, when the client asked for Tables). */
  encode?: (object: KubeObject) => unknown
}

interface Watcher {
  req: WatchRequest
  res: http.ServerResponse
  timers: NodeJS.Timeout[]
}

/** How often a watch that allows bookmarks gets one (the real server: about once a minute). */
const BOOKMARK_EVERY_MS = 5_000

export class WatchHub {
  private readonly history: WatchEvent[] = []
  /** The newest resourceVersion dropped from the history: a watch must start at or after it. */
  private compactedRv = 0
  private readonly watchers = new Set<Watcher>()

  constructor(private readonly limit: number) {}

  /** How many watch streams are open (to check that closed clients leave none behind). */
  get open(): number {
    return this.watchers.size
  }

  record(event: WatchEvent): void {
    this.history.push(event)
    while (this.history.length > this.limit) this.compactedRv = this.history.shift()?.rv ?? this.compactedRv
    for (const w of this.watchers) if (w.req.collection === event.collection) deliver(w, event)
  }

  serve(res: http.ServerResponse, req: WatchRequest): void {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' })
    // client-go's Watch() returns only once it has the headers: send them before any event
    res.flushHeaders()
    const watcher: Watcher = { req, res, timers: [] }
    const from = req.resourceVersion ?? 0
    if (from > 0 && from < this.compactedRv && !req.sendInitialEvents) {
      write(res, {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: ${from} (${this.compactedRv})`,
          reason: 'Expired',
          code: 410,
        },
      })
      res.end()
      return
    }
    if (from === 0 || req.sendInitialEvents) {
      if (req.sendInitialEvents !== false) {
        for (const object of req.current()) emit(watcher, 'ADDED', object)
        // the watch-list protocol (KEP-3157): a bookmark marks the end of the initial state
        if (req.sendInitialEvents) bookmark(watcher, req.currentRv(), { 'k8s.io/initial-events-end': 'true' })
      }
    } else {
      for (const e of this.history) if (e.rv > from && e.collection === req.collection) deliver(watcher, e)
    }
    this.watchers.add(watcher)
    res.on('close', () => this.drop(watcher))
    if (req.timeoutSeconds && req.timeoutSeconds > 0)
      watcher.timers.push(setTimeout(() => res.end(), req.timeoutSeconds * 1000))
    if (req.allowWatchBookmarks)
      watcher.timers.push(setInterval(() => bookmark(watcher, req.currentRv()), BOOKMARK_EVERY_MS))
  }

  /** Ends every stream (server going away or stopping); clients see the watch close and re-watch. */
  closeAll(): void {
    for (const w of [...this.watchers]) {
      this.drop(w)
      w.res.end()
    }
  }

  private drop(w: Watcher): void {
    for (const t of w.timers) clearTimeout(t)
    w.timers.length = 0
    this.watchers.delete(w)
  }
}

/**
 * As the real cacher does: a change that moves an object into the selection is ADDED for this
 * watcher, one that moves it out is DELETED.
 */
function deliver(w: Watcher, e: WatchEvent): void {
  const inScope = (o: KubeObject | undefined) =>
    o !== undefined &&
    (w.req.namespace === undefined || o.metadata.namespace === w.req.namespace) &&
    w.req.matches(o)
  const now = inScope(e.object)
  const before = e.type === 'MODIFIED' && inScope(e.previous)
  if (e.type === 'MODIFIED' && now && !before) emit(w, 'ADDED', e.object)
  else if (e.type === 'MODIFIED' && !now && before) emit(w, 'DELETED', e.object)
  else if (now) emit(w, e.type, e.object)
}

function emit(w: Watcher, type: EventType, object: KubeObject): void {
  write(w.res, { type, object: w.req.encode ? w.req.encode(object) : object })
}

function bookmark(w: Watcher, rv: number, annotations?: Record<string, string>): void {
  write(w.res, {
    type: 'BOOKMARK',
    object: {
      kind: w.req.kind,
      apiVersion: w.req.apiVersion,
      metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) },
    },
  })
}

function write(res: http.ServerResponse, event: { type: string; object: unknown }): void {
  if (!res.writableEnded && !res.destroyed) res.write(JSON.stringify(event) + '\n')
}
