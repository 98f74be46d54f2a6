"""What the tests share: servers, clusters, loads and the browser's helpers."""
