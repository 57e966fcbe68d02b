// Runway console: copy buttons, and pages that ask to refresh themselves. Pages work without it.
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
if (refresh) {
  setTimeout(() => window.location.reload(), Number(refresh.content) * 1000);
}
