{
  "targets": [
    {
      "target_name": "malloc_trim",
      "sources": ["src/trim.c"]
    }
  ]
}
