#!/usr/bin/env bash
# Checks a report folder written by `sim report` or `probe charts` in headless Chromium:
#   1. index.html logs nothing to the console (the page has no scripts, so any console line is an
#      error: a script error, a CSP or parse complaint);
#   2. every <figure> holds an inline <svg> that renders with a non-zero size;
#   3. every *.svg in the folder loads on its own as an <img> (well-formed standalone SVG);
#   4. nothing is fetched from outside the folder (no network, no external scripts/fonts/CSS);
#   5. index.html also parses as XHTML (well-formed XML), as the reports crate promises;
#   6. every chart is drawn: its SVG holds coloured marks (lines, markers, bars, cells) outside
#      its legend, and declares its legend (data-legend-entries), whose labels are counted where
#      they are drawn (the <text>s at data-legend-label-x): the count must match and be at most 6;
#   7. nothing listed as not plotted is plotted: the first column of a table with
#      data-not-plotted-in="G" (sim report's layouts that do not fit on machine G) is no chart
#      text (legend entry, bar label) of any figure with data-group="G";
#   8. a screenshot of the page (headless Chromium --screenshot, 1280 px wide, the first
#      SCREENSHOT_HEIGHT=4000 px) is not blank (a white page compresses to ~23 KB, a drawn one to
#      hundreds); SCREENSHOT=FILE keeps it (look at it: that is the page as a user sees it).
# Usage: scripts/check-report-html.sh DIR        check DIR (exit 0 pass, 1 fail, 2 bad usage)
#        scripts/check-report-html.sh --self-test DIR
#                                                 break copies of DIR in eight ways and check that
#                                                 each one fails (the check can fail), then DIR passes
# Prints "SKIPPED: …" and exits 0 when Chromium is absent. CHROMIUM=/path overrides the binary.
set -euo pipefail

die() { echo "check-report-html: $*" >&2; exit 2; }

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
    echo "SKIPPED: chromium not found (apt-get install -y chromium); report HTML not checked"
    exit 0
fi

# Runs Chromium on file URL $1 with a fresh profile; DOM on stdout, log in $2.
chrome() {
    local profile
    profile=$(mktemp -d)
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --enable-logging=stderr --v=0 \
        --virtual-time-budget=10000 --dump-dom "$1" 2>"$2" || true
    rm -rf "$profile"
}

# The probe script, injected first into <head> of a copy of index.html. It records its findings
# in <pre id="report-check"> once the page (and the test images it adds) have loaded.
probe_script() {
    local files_js=$1
    cat <<JS
<script>
(function () {
  var problems = [];
  var files = [$files_js];
  window.addEventListener('error', function (e) { problems.push('error event: ' + (e.message || (e.target && (e.target.src || e.target.href)))); }, true);
  document.addEventListener('DOMContentLoaded', function () {
    files.forEach(function (f) {
      var img = new Image();
      img.onload = function () { if (!(img.naturalWidth > 0 && img.naturalHeight > 0)) problems.push('svg file has no size: ' + f); };
      img.onerror = function () { problems.push('svg file did not load: ' + f); };
      img.setAttribute('data-report-check', '1');
      img.src = encodeURI(f);
      document.body.appendChild(img);
    });
  });
  var MAX_LEGEND = 6;
  // A mark's colour is data when it is not white, black or a grey (axes, grid, frame).
  function chromatic(c) {
    if (!c || c === 'none') return false;
    var hex = c.match(/^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i);
    var dec = c.match(/^rgb\((\d+),\s*(\d+),\s*(\d+)\)$/);
    var v = hex ? hex.slice(1, 4).map(function (x) { return parseInt(x, 16); })
      : dec ? dec.slice(1, 4).map(Number) : null;
    if (!v) return false;
    return !(v[0] === v[1] && v[1] === v[2]);
  }
  function checkDrawn(fig, svg, i) {
    var declared = svg.getAttribute('data-legend-entries');
    var labelX = svg.getAttribute('data-legend-label-x');
    if (declared === null || labelX === null) { problems.push('figure ' + i + ' svg declares no legend (data-legend-entries)'); return; }
    var drawn = Array.prototype.filter.call(svg.querySelectorAll('text'), function (t) { return t.getAttribute('x') === labelX; }).length;
    if (String(drawn) !== declared) problems.push('figure ' + i + ' declares ' + declared + ' legend entries but draws ' + drawn);
    if (drawn > MAX_LEGEND) problems.push('figure ' + i + ' has ' + drawn + ' legend entries (more than ' + MAX_LEGEND + ' cannot be told apart)');
    var swatchX = parseFloat(labelX) - 40;
    var marks = Array.prototype.filter.call(svg.querySelectorAll('circle,rect,polygon,polyline,path,line'), function (e) {
      if (!(chromatic(e.getAttribute('fill')) || chromatic(e.getAttribute('stroke')))) return false;
      var b = e.getBBox();
      return declared === '0' || b.x + b.width < swatchX;
    }).length;
    if (marks === 0) problems.push('figure ' + i + ' draws no data (no coloured mark outside its legend)');
  }
  function checkNotPlotted() {
    document.querySelectorAll('table[data-not-plotted-in]').forEach(function (t) {
      var group = t.getAttribute('data-not-plotted-in');
      var names = Array.prototype.map.call(t.querySelectorAll('tbody tr'), function (r) { return r.cells[0].textContent.trim(); });
      document.querySelectorAll('figure[data-group]').forEach(function (fig, i) {
        if (fig.getAttribute('data-group') !== group) return;
        fig.querySelectorAll('svg text').forEach(function (tx) {
          var s = tx.textContent.trim();
          names.forEach(function (n) {
            if (s === n || s.indexOf(n + ' ') === 0) problems.push('"' + n + '" is listed as not plotted on ' + group + ' but a chart there draws "' + s + '"');
          });
        });
      });
    });
  }
  window.addEventListener('load', function () {
    var figures = document.querySelectorAll('figure');
    figures.forEach(function (fig, i) {
      var svg = fig.querySelector('svg');
      if (!svg) { problems.push('figure ' + i + ' has no inline svg'); return; }
      var r = svg.getBoundingClientRect();
      if (!(r.width > 0 && r.height > 0)) problems.push('figure ' + i + ' svg renders at ' + r.width + 'x' + r.height);
      if (svg.querySelectorAll('text').length === 0) problems.push('figure ' + i + ' svg has no text');
      checkDrawn(fig, svg, i);
    });
    checkNotPlotted();
    if (figures.length !== files.length) problems.push(figures.length + ' figures on the page for ' + files.length + ' chart files');
    performance.getEntriesByType('resource').forEach(function (e) {
      if (e.name.indexOf('file:') !== 0) problems.push('fetched from outside the folder: ' + e.name);
    });
    var out = document.createElement('pre');
    out.id = 'report-check';
    out.textContent = (problems.length ? 'FAIL\n' + problems.join('\n') : 'PASS') +
      '\nfigures=' + figures.length + ' svg_files=' + files.length;
    document.body.appendChild(out);
  });
})();
</script>
JS
}

# check DIR: prints what it found; returns 0 when everything passes.
check() {
    local dir=$1 work files_js f status=0
    [ -f "$dir/index.html" ] || { echo "FAIL: $dir/index.html missing"; return 1; }
    work=$(mktemp -d)
    cp -r "$dir"/. "$work"/
    files_js=""
    for f in "$work"/*.svg; do
        [ -e "$f" ] || continue
        files_js+="'$(basename "$f" | sed "s/'/\\\\'/g")',"
    done

    # 1. The page as shipped: no console output at all.
    chrome "file://$work/index.html" "$work/.log-plain" >"$work/.dom-plain"
    if grep -q ':CONSOLE' "$work/.log-plain"; then
        echo "FAIL: console output from index.html:"
        grep ':CONSOLE' "$work/.log-plain" | sed 's/^/  /'
        status=1
    fi
    if ! grep -q '<figure' "$work/.dom-plain" && grep -q '<figure' "$work/index.html"; then
        echo "FAIL: Chromium did not render index.html (empty DOM dump)"
        status=1
    fi

    # 2-4. A copy with the probe script injected first into <head>.
    probe_script "$files_js" >"$work/.probe"
    awk -v probe="$work/.probe" '
        !done && /<head>/ { sub(/<head>/, "<head>\n" ); print; while ((getline l < probe) > 0) print l; done = 1; next }
        { print }' "$work/index.html" >"$work/.checked.html"
    grep -q 'report-check' "$work/.checked.html" || { echo "FAIL: index.html has no <head>"; rm -rf "$work"; return 1; }
    chrome "file://$work/.checked.html" "$work/.log-checked" >"$work/.dom-checked"
    local result
    result=$(sed -n '/<pre id="report-check">/,/<\/pre>/p' "$work/.dom-checked" | sed 's/<[^>]*>//g')
    if [ -z "$result" ]; then
        echo "FAIL: the check script did not report (page did not load?)"
        status=1
    elif [ "${result%%$'\n'*}" != "PASS" ]; then
        echo "$result" | sed 's/&gt;/>/g; s/&lt;/</g; s/&amp;/\&/g'
        status=1
    else
        echo "images: ${result##*$'\n'}, all rendered"
    fi
    if grep -q ':CONSOLE' "$work/.log-checked"; then
        echo "FAIL: console output while checking:"
        grep ':CONSOLE' "$work/.log-checked" | sed 's/^/  /'
        status=1
    fi

    # 8. A screenshot of the page as shipped.
    local shot=${SCREENSHOT:-$work/.page.png} profile
    profile=$(mktemp -d)
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --window-size=1280,${SCREENSHOT_HEIGHT:-4000} \
        --virtual-time-budget=10000 --screenshot="$shot" "file://$work/index.html" >/dev/null 2>&1 || true
    rm -rf "$profile"
    if [ ! -s "$shot" ]; then
        echo "FAIL: Chromium wrote no screenshot of index.html"
        status=1
    elif [ "$(stat -c %s "$shot")" -lt 50000 ]; then
        echo "FAIL: the screenshot of index.html is blank ($(stat -c %s "$shot") bytes)"
        status=1
    else
        echo "screenshot: $shot ($(stat -c %s "$shot") bytes)"
    fi

    # 5. Well-formed XML: Chromium's XML parser shows <parsererror> otherwise.
    cp "$work/index.html" "$work/.index.xhtml"
    chrome "file://$work/.index.xhtml" "$work/.log-xhtml" >"$work/.dom-xhtml"
    if grep -q 'parsererror' "$work/.dom-xhtml"; then
        echo "FAIL: index.html is not well-formed XML:"
        sed -n 's/.*<parsererror[^>]*>\(.*\)<\/parsererror>.*/\1/p' "$work/.dom-xhtml" | sed 's/<[^>]*>/ /g' | head -3
        status=1
    fi
    rm -rf "$work"
    return $status
}

if [ "${1:-}" = "--self-test" ]; then
    [ $# -eq 2 ] && [ -d "$2" ] || die "usage: $0 --self-test DIR"
    src=$2
    broken=$(mktemp -d)
    trap 'rm -rf "$broken"' EXIT
    svg=$(ls "$src"/*.svg | head -1)
    [ -n "$svg" ] || die "$src has no .svg file to break"
    expect_fail() {
        local what=$1
        if check "$broken/case" >"$broken/out" 2>&1; then
            echo "SELF-TEST FAILED: the check passed a report with $what"; cat "$broken/out"; exit 1
        fi
        echo "self-test: caught $what: $(grep -m1 -v '^FAIL$' "$broken/out" | head -c 160)"
    }
    fresh() { rm -rf "$broken/case"; cp -r "$src" "$broken/case"; }
    fresh; printf '<svg xmlns="http://www.w3.org/2000/svg"><text>broken' >"$broken/case/$(basename "$svg")"
    expect_fail "a truncated SVG file"
    fresh; sed -i 's|</body>|<script>console.error("injected")</script></body>|' "$broken/case/index.html"
    expect_fail "a console error"
    fresh; sed -i 's|</body>|<img src="https://example.invalid/x.png" /></body>|' "$broken/case/index.html"
    expect_fail "a network fetch"
    fresh; sed -i '0,/<figure/s|<figure|<p><figure|' "$broken/case/index.html"
    expect_fail "malformed XHTML"
    # The first chart's marks all turned black: nothing coloured is plotted.
    fresh; perl -0777 -pi -e 's{(<figure.*?</figure>)}{my $f = $1; $f =~ s/(fill|stroke)="#[0-9A-Fa-f]{6}"/$1="#000000"/g; $f}se' "$broken/case/index.html"
    expect_fail "a chart with no plotted data"
    # Seven more legend labels, drawn where the legend is and declared.
    fresh; perl -0777 -pi -e 's{<svg data-legend-entries="(\d+)" data-legend-label-x="(\d+)"(.*?)</svg>}{"<svg data-legend-entries=\"" . ($1 + 7) . "\" data-legend-label-x=\"$2\"$3" . join("", map { "<text x=\"$2\" y=\"0\">extra $_</text>" } 1 .. 7) . "</svg>"}se' "$broken/case/index.html"
    expect_fail "a chart with more than six legend entries"
    fresh; perl -0777 -pi -e 's{<svg data-legend-entries="\d+" data-legend-label-x="\d+"}{<svg}s' "$broken/case/index.html"
    expect_fail "a chart that declares no legend"
    fresh; perl -0777 -pi -e 's{<body>.*</body>}{<body></body>}s' "$broken/case/index.html"
    expect_fail "a blank page"
    # A layout listed as not drawn, drawn as a label in its machine's first chart.
    if grep -q '<table data-not-plotted-in=' "$src/index.html"; then
        fresh; perl -0777 -pi -e 'if (/<table data-not-plotted-in="([^"]*)">.*?<tbody>\s*<tr><td>([^<]*)<\/td>/s) { my ($g, $n) = ($1, $2); s{(<figure data-group="\Q$g\E">\s*<svg[^>]*>)}{$1<text x="1" y="1">$n</text>}; }' "$broken/case/index.html"
        expect_fail "a layout listed as not drawn but plotted"
    else
        echo "self-test: $src lists no layout as not drawn; the not-plotted case was not run"
    fi
    check "$src"
    exit $?
fi

[ $# -eq 1 ] || die "usage: $0 DIR  (a folder with index.html from sim report or probe charts)"
[ -d "$1" ] || die "$1 is not a folder"
if check "$1"; then
    echo "PASS: $1/index.html opens in Chromium without console errors, every chart renders"
else
    echo "report HTML check failed for $1" >&2
    exit 1
fi
