/**
 * s3rver with private buckets, like S3's default (Block Public Access): a request that carries no
 * credentials (no Authorization header, no signed query) is refused 403 AccessDenied before s3rver
 * routes it; s3rver itself then checks the signature of every other request. Plain s3rver serves
 * anonymous reads of any bucket, which real S3 refuses: a test of "the object is not public" needs
 * this. Takes s3rver's own command line.
 */
'use strict'
const S3rver = require('s3rver')
const S3Error = require('s3rver/lib/models/error')

const callback = S3rver.prototype.callback
S3rver.prototype.callback = function () {
  this.middleware.unshift(async (ctx, next) => {
    const signed =
      'authorization' in ctx.headers || 'Signature' in ctx.query || 'X-Amz-Algorithm' in ctx.query
    if (!signed) throw new S3Error('AccessDenied', 'Access Denied')
    return next()
  })
  return callback.call(this)
}
require('s3rver/bin/s3rver.js')
