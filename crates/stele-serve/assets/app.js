// stele serve: the little script the pages use; every page works without it.
// "expand all" / "collapse all" on a document's tree.
"use strict";
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-tree]");
  if (!button) {
    return;
  }
  var open = button.getAttribute("data-tree") === "open";
  document.querySelectorAll(".tree details").forEach(function (d) {
    d.open = open;
  });
});
