// Runway console: copy buttons, pages that ask to refresh themselves, and streamed answers as they
// come. Pages work without it.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });
});
const refresh = document.querySelector("meta[name=runway-refresh]");
const live = document.getElementById("live");
if (live) {
  // A streamed answer in progress: its text so far, asked every 250 ms, until anything else happens
  // in the run (a tool call, the stored answer, its end), when the page reloads to show it.
  const text = live.querySelector(".text");
  const ask = () => fetch("/console/runs/" + live.dataset.run + "/live?after=" + live.dataset.after,
    { credentials: "same-origin", cache: "no-store" })
    .then((response) => response.json())
    .then((answer) => {
      if (answer.changed) {
        window.location.reload();
        return;
      }
      if (answer.text) {
        text.textContent = answer.text;
        live.hidden = false;
      }
      setTimeout(ask, 250);
    })
    .catch(() => setTimeout(() => window.location.reload(), 2000));
  ask();
} else if (refresh) {
  setTimeout(() => window.location.reload(), Number(refresh.content) * 1000);
}
