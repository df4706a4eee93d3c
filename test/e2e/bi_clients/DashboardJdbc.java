// The dashboard through JDBC PreparedStatements (Debian's libpostgresql-jdbc-java), as an analyst.
// Driven by test_bi_clients.py. Usage: java -cp <classes>:/usr/share/java/postgresql.jar DashboardJdbc <url>
// Every value is a ? parameter (setDate, setInt, setString): pgjdbc binds them on the server ($1), and
// from the fifth execution of a statement on it uses a named server-side prepared statement.
// Prints one line per shape (see test_bi_clients.py).
import java.sql.Connection;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class DashboardJdbc {
    interface Binder {
        void bind(PreparedStatement ps, int execution) throws SQLException;
    }

    private static Connection conn;

    private static String clean(Object s) {
        return s == null ? "" : s.toString().replace('\t', ' ').replace('\n', ' ');
    }

    private static double spent() throws SQLException {
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT spent FROM dx.budgets WHERE \"table\" = 'visits'::regclass")) {
            rs.next();
            return rs.getDouble(1);
        }
    }

    // Runs sql `times` times (binder sets the parameters of each execution); reports the last result.
    private static void shape(String name, String sql, int times, Binder binder) throws SQLException {
        double before = spent();
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            List<String> keys = new ArrayList<>();
            List<String> values = new ArrayList<>();
            for (int t = 0; t < times; t++) {
                binder.bind(ps, t);
                keys.clear();
                values.clear();
                try (ResultSet rs = ps.executeQuery()) {
                    int n = rs.getMetaData().getColumnCount();
                    while (rs.next()) {
                        keys.add(clean(rs.getString(1)));
                        values.add(clean(rs.getString(n)));
                    }
                }
            }
            System.out.println(String.join("\t", "shape", name, "ok", Double.toString(spent() - before),
                                           Integer.toString(keys.size()), String.join(";", keys),
                                           String.join(";", values)));
        } catch (SQLException e) {
            System.out.println(String.join("\t", "shape", name, "error", Double.toString(spent() - before),
                                           clean(e.getSQLState()), clean(e.getMessage()), clean(sql)));
        }
    }

    public static void main(String[] args) throws Exception {
        conn = DriverManager.getConnection(args[0]);
        conn.setAutoCommit(true);
        Date from = Date.valueOf("2024-01-01");
        Date to = Date.valueOf("2025-01-01");

        shape("monthly", "SELECT date_trunc('month', day) AS month, count(*) AS n, avg(amount) AS avg_amount "
                         + "FROM visits WHERE day >= ? AND day < ? GROUP BY date_trunc('month', day) ORDER BY month",
              1, (ps, t) -> { ps.setDate(1, from); ps.setDate(2, to); });

        shape("count_filtered", "SELECT count(*) AS n FROM visits WHERE age >= ?", 1, (ps, t) -> ps.setInt(1, 40));

        shape("pct_of_total", "SELECT channel, n * 100.0 / sum(n) OVER () AS pct FROM "
                              + "(SELECT channel, count(*) AS n FROM visits WHERE day >= ? GROUP BY channel) s",
              1, (ps, t) -> ps.setDate(1, from));

        shape("top10", "SELECT channel, count(*) AS n FROM visits WHERE age >= ? GROUP BY channel "
                       + "ORDER BY n DESC LIMIT ?",
              1, (ps, t) -> { ps.setInt(1, 18); ps.setInt(2, 10); });

        // past pgjdbc's prepareThreshold (5): the last executions use a named server-side statement
        shape("prepared_x6", "SELECT date_trunc('month', day) AS month, count(*) AS n FROM visits "
                             + "WHERE day >= ? AND age >= ? GROUP BY 1 ORDER BY 1",
              6, (ps, t) -> { ps.setDate(1, Date.valueOf("2024-0" + (1 + t) + "-01")); ps.setInt(2, 20 + 5 * t); });

        // a filter drop-down (the declared values, no charge) and "the last 30 days"
        shape("dropdown", "SELECT DISTINCT channel FROM visits ORDER BY channel", 1, (ps, t) -> { });
        shape("last_30_days", "SELECT channel, count(*) AS n FROM visits WHERE day >= current_date - ? GROUP BY channel",
              1, (ps, t) -> ps.setInt(1, 30));

        shape("attack_raw", "SELECT * FROM visits WHERE channel = ?", 1, (ps, t) -> ps.setString(1, "web"));
        conn.close();
    }
}
