// The floor of a whole-process measurement (bench/frontend_bench.py): a
// C++ program that does nothing: process creation and the loader.
int main() { return 0; }
