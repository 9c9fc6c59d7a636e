#!/usr/bin/env bash
# Links this checkout's CLI (scripts/with-tools.sh, which also puts .tools/helm on PATH) as
# `constellation` into a folder on PATH, so that the commands the CLI prints (`constellation status
# -C mini-cluster`) work as printed. The folder: $CONSTELL_BIN_DIR if set; else ~/.local/bin or ~/bin
# when on PATH (the user's own, no sudo); else /usr/local/bin when on PATH and writable (root: what
# `make install` uses); else ~/.local/bin, with the line that puts it on PATH. A `constellation`
# there that is not a link to a checkout's wrapper (another install) is left alone.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
wrapper="$root/scripts/with-tools.sh"

on_path() { case ":$PATH:" in *":$1:"*) return 0 ;; *) return 1 ;; esac; }

dir=${CONSTELL_BIN_DIR:-}
if [ -z "$dir" ]; then
  for candidate in "$HOME/.local/bin" "$HOME/bin"; do
    if on_path "$candidate"; then dir=$candidate && break; fi
  done
fi
if [ -z "$dir" ] && on_path /usr/local/bin && [ -w /usr/local/bin ]; then dir=/usr/local/bin; fi
dir=${dir:-$HOME/.local/bin}
mkdir -p "$dir"
link="$dir/constellation"

if [ -e "$link" ] || [ -L "$link" ]; then
  target=$(readlink "$link" || true)
  case "$target" in
    */scripts/with-tools.sh) ;; # a checkout's wrapper (this one or an older clone): ours to replace
    *)
      echo "setup: $link is not a link to a checkout's scripts/with-tools.sh; left as it is."
      echo "setup: run this checkout as $wrapper, or remove $link and run scripts/link-cli.sh again."
      exit 0
      ;;
  esac
fi
ln -sfn "$wrapper" "$link"
echo "setup: linked $link -> $wrapper (remove the link to undo)"
if ! on_path "$dir"; then
  echo "setup: $dir is not on your PATH; put it there (then \`constellation\` works as the CLI prints it):"
  echo "  export PATH=\"$dir:\$PATH\""
  echo "setup: until then the CLI prints its commands with the full path $wrapper"
fi
