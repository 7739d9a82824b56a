// Herald console: the flow page's live updates. Everything else works
// without script.
(function () {
  "use strict";
  var table = document.querySelector("table.flow");
  if (!table || !window.EventSource) return;
  var history = {}; // row id -> the last 30 rates
  function row(id) { return table.querySelector('tr[data-id="' + CSS.escape(id) + '"]'); }
  function set(tr, cls, text) { var td = tr && tr.querySelector("td." + cls); if (td) td.textContent = text; }
  function rate(x) { return x >= 100 ? Math.round(x).toString() : x.toFixed(1); }
  function spark(tr, id, value) {
    var h = history[id] || (history[id] = []);
    h.push(value);
    if (h.length > 30) h.shift();
    var max = Math.max.apply(null, h.concat([1]));
    var pts = h.map(function (v, i) { return (i * 2) + "," + (15 - (v / max) * 14).toFixed(1); }).join(" ");
    var line = tr && tr.querySelector("svg.spark polyline");
    if (line) line.setAttribute("points", pts);
  }
  var live = document.getElementById("live");
  var source = new EventSource("/console/flow/live");
  source.addEventListener("flow", function (ev) {
    var f = JSON.parse(ev.data);
    f.streams.forEach(function (s) {
      var tr = row(s.name);
      set(tr, "in", rate(s.in_rate));
      set(tr, "stored", s.messages);
      spark(tr, s.name, s.in_rate);
      (s.consumers || []).forEach(function (c) {
        var id = s.name + "/" + c.name, ctr = row(id);
        set(ctr, "out", rate(c.out_rate));
        set(ctr, "pending", c.pending);
        set(ctr, "ackpending", c.ack_pending);
        set(ctr, "redelivered", c.redelivered);
        spark(ctr, id, c.out_rate);
      });
    });
    var body = document.getElementById("circuits");
    if (body) {
      body.textContent = "";
      var list = f.circuits || [];
      if (!list.length) {
        var tr = body.insertRow(), td = tr.insertCell();
        td.colSpan = 5;
        td.textContent = "Every circuit is closed: no provider is being skipped.";
      }
      list.forEach(function (c) {
        var tr = body.insertRow();
        tr.className = c.state;
        [c.channel, c.provider, c.state, new Date(c.since).toISOString().replace("T", " ").slice(0, 19) + " UTC", c.process]
          .forEach(function (v) { tr.insertCell().textContent = v; });
      });
    }
    var depth = document.getElementById("dlq-depth");
    if (depth) depth.textContent = f.dlq;
    live.textContent = "Live, updated " + new Date(f.at).toLocaleTimeString() + ".";
  });
  source.addEventListener("unavailable", function () { live.textContent = "The streams cannot be read right now; retrying."; });
  source.onerror = function () { live.textContent = "Disconnected; reconnecting…"; };
})();
