module example.com/undocumented

go 1.26.0
