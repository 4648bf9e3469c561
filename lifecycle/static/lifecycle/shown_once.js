// The box of a credential shown once (templates/admin/shown_once.html): a click in it selects it all, and
// the Copy button copies it. A file, not onclick="": the Content-Security-Policy allows no inline script.
for (const box of document.querySelectorAll(".secret-box")) {
  const shown = box.querySelector("input");
  const copy = box.querySelector("button");
  shown.addEventListener("focus", () => shown.select());
  copy.addEventListener("click", () => {
    navigator.clipboard.writeText(shown.value);
    copy.textContent = "Copied";
  });
}
