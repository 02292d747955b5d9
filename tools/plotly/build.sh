#!/bin/sh
# Rebuild portal/static/plotly/plotly.min.js (committed: the portal runs on air-gapped networks and `make` needs
# no Node.js). Needs Node.js and npm with access to the npm registry; run from anywhere:  sh tools/plotly/build.sh
# The flags are those of plotly.js's own build (its esbuild-config.js), minified, without the map styles.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../portal/static/plotly"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/entry.js" "$work/"
cd "$work"
npm install --no-audit --no-fund --ignore-scripts --silent
node_modules/.bin/esbuild entry.js --bundle --minify --format=iife --global-name=Plotly --target=es2016 \
  --define:global=window --define:define.amd=false --define:process.env.NODE_DEBUG=false \
  --alias:stream=stream-browserify --legal-comments=none --outfile=plotly.min.js
{ echo "/* plotly.js $(node -p "require('plotly.js/package.json').version") (core, bar, heatmap). MIT license, Copyright (c)"
  echo "   Plotly Technologies Inc.: see LICENSE.txt. Built by tools/plotly/build.sh. */"
  cat plotly.min.js; } > "$out/plotly.min.js"
cp node_modules/plotly.js/LICENSE "$out/LICENSE.txt"
ls -l "$out/plotly.min.js"
