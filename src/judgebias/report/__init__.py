"""The HTML pages: report.html and sweep_report.html, their charts, templates and static files."""
