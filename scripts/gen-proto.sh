#!/usr/bin/env bash
# Regenerates src/gen/ from proto/*.proto with protoc (Debian protobuf-compiler) and ts-proto.
# The output is committed, so building and testing never need protoc.
set -euo pipefail
cd "$(dirname "$0")/.."
out=src/gen
# Only protoc's files: src/gen/schemas.ts comes from scripts/gen-schemas.ts.
mkdir -p "$out"
for f in proto/*.proto; do rm -f "$out/$(basename "$f" .proto).ts"; done
protoc \
  --plugin=protoc-gen-ts_proto="${PROTO_PLUGIN:-node_modules/.bin/protoc-gen-ts_proto}" \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,env=node,useOptionals=none,forceLong=number,oneof=unions-value,outputJsonMethods=false,outputPartialMethods=true \
  -I proto proto/*.proto
